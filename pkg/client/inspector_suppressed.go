package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// SuppressedTrigger is a trigger that created no run because another run
// held its key: rejected with a collision, attached, signalled or
// debounced to the owner, or an event's task deduplicated.
type SuppressedTrigger struct {
	// Time is when Redis refused it.
	Time time.Time `json:"time"`
	Key  string    `json:"key"`
	// Owner is the run that held the key, the run the trigger "became".
	Owner string `json:"ownerRunId"`
	Task  string `json:"task"`
	// Source is client, http, cli, event:<event id>, or what the trigger
	// named with WithSource.
	Source string `json:"source"`
	// InputDigest is the first 16 hex digits of the SHA-256 of the
	// trigger's input as sent, to tell which of several triggers of a
	// key a record is.
	InputDigest string `json:"inputDigest"`
	// Outcome is rejected, attached, signalled, debounced or
	// deduplicated (an event's task).
	Outcome string `json:"outcome"`
}

// The outcomes of a suppressed trigger.
const (
	SuppressedRejected     = engine.SuppressedRejected
	SuppressedAttached     = engine.SuppressedAttached
	SuppressedSignalled    = engine.SuppressedSignalled
	SuppressedDebounced    = engine.SuppressedDebounced
	SuppressedDeduplicated = engine.SuppressedDeduplicated
)

// ListSuppressed answers "why didn't it run?": the triggers that created
// no run because another run held their key, newest first, with the run
// that held it. With a Key or an Owner it searches the one partition their
// records live in; without, it merges every partition's. Records are kept
// for a day, in about 10,000 stream entries per namespace (the oldest go
// first; an entry holds the suppressed triggers of one call to Redis).
func (in *Inspector) ListSuppressed(ctx context.Context, o ListOptions) (*Page[SuppressedTrigger], error) {
	limit, err := pageLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	es, next, err := in.c.store.ListSuppressed(ctx, engine.SuppressedQuery{
		Key: o.Key, Owner: o.Owner, Limit: limit, Cursor: o.Cursor, Now: in.c.opts.Clock.Now(),
	})
	if errors.Is(err, engine.ErrInvalidCursor) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, o.Cursor)
	}
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	page := &Page[SuppressedTrigger]{Items: make([]SuppressedTrigger, len(es)), NextCursor: next}
	for i, e := range es {
		page.Items[i] = SuppressedTrigger{
			Time: e.Time.UTC(), Key: e.Key, Owner: e.Owner, Task: e.Task, Source: e.Source,
			InputDigest: e.InputDigest, Outcome: e.Outcome,
		}
	}
	return page, nil
}
