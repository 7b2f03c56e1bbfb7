package client

import (
	"context"
	"encoding/json"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// ErrEventNotFound is returned for an event that does not exist, or whose
// record has expired after its retention.
var ErrEventNotFound = engine.ErrEventNotFound

// EventInfo is a stored event (see package events) and what it did to
// each task subscribed to its key.
type EventInfo struct {
	ID       string          `json:"id"`
	Key      string          `json:"key"`
	Payload  json.RawMessage `json:"payload"`
	Metadata json.RawMessage `json:"metadata"`
	// CreatedAt is when the event was ingested.
	CreatedAt time.Time `json:"createdAt"`
	// Runs has one entry per subscribed task, by task name.
	Runs []EventTaskRun `json:"runs"`
}

// EventTaskRun is what an event did to one subscribed task.
type EventTaskRun struct {
	Task string `json:"task"`
	// Outcome is "created", "deduplicated", "debounced" or "error" (see
	// the Outcome constants of package events).
	Outcome string `json:"outcome"`
	// RunID is the run created, or the existing run the event was
	// deduplicated (or debounced) to.
	RunID          string `json:"runId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Error          string `json:"error,omitempty"`
}

// eventInfo converts a stored event record.
func eventInfo(r *engine.Event) *EventInfo {
	e := &EventInfo{
		ID: r.ID, Key: r.Key, Payload: json.RawMessage(r.Payload), Metadata: json.RawMessage(r.Meta),
		CreatedAt: r.Created.UTC(), Runs: make([]EventTaskRun, len(r.Runs)),
	}
	for n, x := range r.Runs {
		e.Runs[n] = EventTaskRun{Task: x.Task, Outcome: x.Outcome, RunID: x.RunID, IdempotencyKey: x.IdempotencyKey, Error: x.Error}
	}
	return e
}

// GetEvent reads one event, or fails with an error matching
// ErrEventNotFound.
func (in *Inspector) GetEvent(ctx context.Context, id string) (*EventInfo, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	r, err := in.c.store.GetEvent(ctx, id)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	return eventInfo(r), nil
}

// ListEvents returns a page of events, newest first, merged from every
// partition as ListRuns merges runs. Events whose records expired between
// reading the index and the records are left out.
func (in *Inspector) ListEvents(ctx context.Context, o ListOptions) (*Page[*EventInfo], error) {
	limit, pos, err := pageStart(o.Limit, o.Cursor)
	if err != nil {
		return nil, err
	}
	if err := checkRange(o.Since, o.Until); err != nil {
		return nil, err
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	w := windowOf(pos, o.Since, o.Until)
	es, next, err := in.indexPage(ctx, func(ctx context.Context) ([]engine.IndexEntry, error) {
		return in.c.store.PageEvents(ctx, o.Key, w.pos, limit)
	}, limit, w)
	if err != nil {
		return nil, err
	}
	recs, err := in.c.store.GetEvents(ctx, entryIDs(es))
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	page := &Page[*EventInfo]{Items: make([]*EventInfo, len(recs)), NextCursor: next}
	for i, r := range recs {
		page.Items[i] = eventInfo(r)
	}
	return page, nil
}
