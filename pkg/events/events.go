package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
)

// Defaults and limits of Options and ListOptions.
const (
	RetentionDefault       = 7 * 24 * time.Hour
	RetentionMin           = time.Second
	MaxBatchDefault        = 100
	RefreshIntervalDefault = 2 * time.Second
	ListLimitDefault       = 50
	ListLimitMax           = 1000
	// KeyMaxBytes bounds an event key.
	KeyMaxBytes = 256
)

// sweepInterval is how often pushes also sweep expired entries out of the
// events index; the records themselves expire on their own.
const sweepInterval = time.Minute

// sweepBatch and sweepBatches bound the work of one sweep.
const (
	sweepBatch   = 500
	sweepBatches = 20
)

// Outcomes of a subscribed task in an event.
const (
	// OutcomeCreated: the event created the task's run.
	OutcomeCreated = redisstore.EventRunCreated
	// OutcomeDeduplicated: another run held the task's key; RunID names it
	// and no run was created.
	OutcomeDeduplicated = redisstore.EventRunDeduplicated
	// OutcomeDebounced: the key is held by a debounced run that had not
	// started; that run (RunID) now has this event's payload and its window
	// starts again.
	OutcomeDebounced = redisstore.EventRunDebounced
	// OutcomeError: the task's expression failed on this payload (or its
	// registered definition could not be built); Error says why.
	OutcomeError = redisstore.EventRunError
)

// Options configure an Ingester. Zero values mean the documented defaults.
type Options struct {
	// Retention is how long event records are kept (default 7 days).
	Retention time.Duration
	// MaxBatch bounds PushMany (default 100).
	MaxBatch int
	// RefreshInterval is how long the subscriptions read from the task
	// registry are reused before they are read again (default 2s; negative
	// reads them on every push).
	RefreshInterval time.Duration
	Logger          *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Retention == 0 {
		o.Retention = RetentionDefault
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = MaxBatchDefault
	}
	if o.RefreshInterval == 0 {
		o.RefreshInterval = RefreshIntervalDefault
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Retention < RetentionMin:
		return fmt.Errorf("events: Retention %s is below %s", o.Retention, RetentionMin)
	case o.MaxBatch < 1:
		return fmt.Errorf("events: MaxBatch %d must be at least 1", o.MaxBatch)
	}
	return nil
}

// Ingester stores events and triggers the tasks subscribed to them. It is
// safe for concurrent use.
type Ingester struct {
	c     *client.Client
	copts client.Options
	store *redisstore.Store
	opts  Options
	log   *slog.Logger
	subs  subscriptions

	lastSweep atomic.Int64 // unix ms of the last sweep of the events index
}

// New returns an Ingester that pushes through c: the events live in c's
// namespace, and their runs get c's limits and run retention.
func New(c *client.Client, opts Options) (*Ingester, error) {
	if c == nil {
		return nil, errors.New("events: nil client")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	i := &Ingester{c: c, copts: c.Options(), store: c.Store(), opts: opts, log: opts.Logger}
	i.subs.ttl = opts.RefreshInterval
	return i, nil
}

// Options returns the ingester's options with defaults filled in.
func (i *Ingester) Options() Options { return i.opts }

// Input is one event of a PushMany batch.
type Input struct {
	Key      string
	Payload  json.RawMessage
	Metadata json.RawMessage
}

// Event is a stored event and what it did to each subscribed task.
type Event struct {
	ID       string          `json:"id"`
	Key      string          `json:"key"`
	Payload  json.RawMessage `json:"payload"`
	Metadata json.RawMessage `json:"metadata"`
	// CreatedAt is when the event was ingested.
	CreatedAt time.Time `json:"createdAt"`
	// Runs has one entry per subscribed task, by task name.
	Runs []TaskRun `json:"runs"`
}

// TaskRun is what an event did to one subscribed task.
type TaskRun struct {
	Task string `json:"task"`
	// Outcome is OutcomeCreated, OutcomeDeduplicated, OutcomeDebounced or
	// OutcomeError.
	Outcome string `json:"outcome"`
	// RunID is the run created, or the existing run the event was
	// deduplicated (or debounced) to.
	RunID          string `json:"runId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Error          string `json:"error,omitempty"`
}

// ListOptions select events for List.
type ListOptions struct {
	// Key lists only the events of this key ("" lists all).
	Key string
	// Limit is the most events returned (default 50, at most 1000).
	Limit int
	// Offset skips that many of the newest events.
	Offset int
}

// Push stores an event and triggers every task subscribed to key. Each
// task's idempotency key is derived with input = payload and
// additional_metadata = metadata. A task whose key is held gets no run and
// no error: the event says which run it was deduplicated to. A task whose
// expression fails on this payload is recorded with the error; the others
// still run. Payload and metadata must be JSON objects (nil means {}).
func (i *Ingester) Push(ctx context.Context, key string, payload json.RawMessage, metadata json.RawMessage) (*Event, error) {
	in := Input{Key: key, Payload: payload, Metadata: metadata}
	if err := i.validate(-1, &in); err != nil {
		return nil, err
	}
	ctx, cancel := i.opCtx(ctx)
	defer cancel()
	p, err := i.prepare(ctx, in)
	if err != nil {
		return nil, err
	}
	runs, err := i.store.PushEvent(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("events: push %q: %w", key, err)
	}
	i.maybeSweep(ctx)
	ev := eventOf(p, runs)
	i.log.Debug("taskq: event ingested", "event", ev.ID, "key", ev.Key, "tasks", len(ev.Runs))
	return ev, nil
}

// PushMany pushes a batch of events in one round trip. Every event is
// validated before anything is written; an invalid one fails the batch
// with an *InvalidEventError naming its index, and a batch over its limit
// with a *client.LimitError. Events are pushed in order, so a later event
// is deduplicated to a run an earlier one of the batch created. Each event is stored atomically with its runs;
// when Redis fails some of them, the others are still returned (the failed
// ones as nil) with a *PushError per failure.
func (i *Ingester) PushMany(ctx context.Context, in []Input) ([]*Event, error) {
	if len(in) > i.opts.MaxBatch {
		return nil, &client.LimitError{What: "batch", Size: len(in), Limit: i.opts.MaxBatch, Unit: "events"}
	}
	in = append([]Input(nil), in...)
	for n := range in {
		if err := i.validate(n, &in[n]); err != nil {
			return nil, err
		}
	}
	ctx, cancel := i.opCtx(ctx)
	defer cancel()
	ps := make([]*redisstore.PushEventParams, len(in))
	for n := range in {
		p, err := i.prepare(ctx, in[n])
		if err != nil {
			return nil, err
		}
		ps[n] = p
	}
	res, errs := i.store.PushEvents(ctx, ps)
	out := make([]*Event, len(in))
	var failed []error
	for n := range ps {
		if errs[n] != nil {
			failed = append(failed, &PushError{Index: n, Err: errs[n]})
			continue
		}
		out[n] = eventOf(ps[n], res[n])
	}
	i.maybeSweep(ctx)
	i.log.Debug("taskq: events ingested", "events", len(in), "failed", len(failed))
	return out, errors.Join(failed...)
}

// Get reads an event, or fails with ErrEventNotFound.
func (i *Ingester) Get(ctx context.Context, id string) (*Event, error) {
	ctx, cancel := i.opCtx(ctx)
	defer cancel()
	e, err := i.store.GetEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	return fromRecord(e), nil
}

// List returns events newest first. Events whose records expired between
// reading the index and the records are left out.
func (i *Ingester) List(ctx context.Context, opts ListOptions) ([]*Event, error) {
	if opts.Limit < 0 || opts.Offset < 0 {
		return nil, fmt.Errorf("events: list: limit %d and offset %d must not be negative", opts.Limit, opts.Offset)
	}
	if opts.Limit == 0 {
		opts.Limit = ListLimitDefault
	}
	if opts.Limit > ListLimitMax {
		return nil, fmt.Errorf("events: list: limit %d is over the maximum of %d", opts.Limit, ListLimitMax)
	}
	ctx, cancel := i.opCtx(ctx)
	defer cancel()
	ids, err := i.store.ListEventIDs(ctx, opts.Key, int64(opts.Offset), int64(opts.Limit))
	if err != nil {
		return nil, err
	}
	recs, err := i.store.GetEvents(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*Event, len(recs))
	for n, r := range recs {
		out[n] = fromRecord(r)
	}
	return out, nil
}

// validate checks an event and fills in empty payload and metadata. It
// writes nothing.
func (i *Ingester) validate(index int, in *Input) error {
	if err := checkKey(in.Key); err != "" {
		return &InvalidEventError{Index: index, Field: "key", Message: err}
	}
	var err error
	if in.Payload, err = object(index, "payload", in.Payload, i.copts.MaxInputBytes, i.copts.MaxInputDepth); err != nil {
		return err
	}
	in.Metadata, err = object(index, "metadata", in.Metadata, i.copts.MaxMetadataBytes, i.copts.MaxInputDepth)
	return err
}

func checkKey(key string) string {
	switch {
	case key == "":
		return "must not be empty"
	case len(key) > KeyMaxBytes:
		return fmt.Sprintf("is %d bytes, over the limit of %d", len(key), KeyMaxBytes)
	case !utf8.ValidString(key):
		return "is not valid UTF-8"
	}
	for _, r := range key {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Sprintf("%q contains whitespace or a control character", key)
		}
	}
	return ""
}

// object checks that raw is a JSON object within limit bytes, nested no
// deeper than depth levels; empty means {}. The depth is checked here, for
// every event, as a direct trigger checks it: deriving a key checks it too,
// but only for tasks that have a key expression.
func object(index int, field string, raw json.RawMessage, limit, depth int) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage("{}"), nil
	}
	if limit > 0 && len(raw) > limit {
		le := &client.LimitError{What: field, Size: len(raw), Limit: limit}
		return nil, &InvalidEventError{Index: index, Field: field, Message: fmt.Sprintf("is %d bytes, over the limit of %d", le.Size, le.Limit), Err: le}
	}
	// Before json.Valid, which recurses once per level.
	if err := idempotency.CheckDepth(field, trimmed, depth); err != nil {
		return nil, &InvalidEventError{Index: index, Field: field, Message: fmt.Sprintf("nests deeper than the limit of %d levels", depth)}
	}
	if !json.Valid(trimmed) {
		return nil, &InvalidEventError{Index: index, Field: field, Message: "is not valid JSON"}
	}
	if trimmed[0] != '{' {
		return nil, &InvalidEventError{Index: index, Field: field, Message: "must be a JSON object, got " + jsonKind(trimmed[0])}
	}
	return trimmed, nil
}

func jsonKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// prepare resolves the event's subscribed tasks, derives their keys and
// builds the parameters of the push script. It writes nothing.
func (i *Ingester) prepare(ctx context.Context, in Input) (*redisstore.PushEventParams, error) {
	subs, err := i.subscribers(ctx, in.Key)
	if err != nil {
		return nil, fmt.Errorf("events: read subscriptions: %w", err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := i.copts.Clock.Now()
	p := &redisstore.PushEventParams{
		ID: id.String(), Key: in.Key, Payload: in.Payload, Meta: in.Metadata,
		Now: now, Retention: i.opts.Retention, Tasks: make([]redisstore.EventTask, 0, len(subs)),
	}
	for _, s := range subs {
		t, err := i.eventTask(s, in, now)
		if err != nil {
			return nil, err
		}
		p.Tasks = append(p.Tasks, t)
	}
	return p, nil
}

// eventTask derives one task's key and describes its run exactly as a
// direct trigger would, except that a held key is never an error.
func (i *Ingester) eventTask(s subscriber, in Input, now time.Time) (redisstore.EventTask, error) {
	if s.err != nil {
		return redisstore.EventTask{Task: s.name, Error: "task definition: " + s.err.Error()}, nil
	}
	def := s.def
	key, err := def.Key(in.Payload, in.Metadata)
	if err != nil {
		return redisstore.EventTask{Task: s.name, Error: err.Error()}, nil
	}
	id, err := uuid.NewV7()
	if err != nil {
		return redisstore.EventTask{}, err
	}
	p := &redisstore.EnqueueParams{
		RunID: id.String(), Task: def.Name, Input: in.Payload, Meta: in.Metadata,
		Strategy: redisstore.StrategyNone, Retries: def.Retries, MaxDeliveries: def.MaxDeliveries,
		Timeout: def.Timeout, Retention: i.copts.Retention, Now: now,
	}
	if idem := def.Idempotency; idem != nil {
		p.Key = key
		p.Strategy = idem.Strategy
		p.Hold = idem.Hold()
		p.Retain = idem.Retain
	}
	return redisstore.EventTask{Run: p}, nil
}

func eventOf(p *redisstore.PushEventParams, runs []redisstore.EventRun) *Event {
	return fromRecord(&redisstore.Event{ID: p.ID, Key: p.Key, Payload: p.Payload, Meta: p.Meta, Created: p.Now, Runs: runs})
}

func fromRecord(r *redisstore.Event) *Event {
	e := &Event{
		ID: r.ID, Key: r.Key, Payload: json.RawMessage(r.Payload), Metadata: json.RawMessage(r.Meta),
		CreatedAt: r.Created.UTC(), Runs: make([]TaskRun, len(r.Runs)),
	}
	for n, x := range r.Runs {
		e.Runs[n] = TaskRun{Task: x.Task, Outcome: x.Outcome, RunID: x.RunID, IdempotencyKey: x.IdempotencyKey, Error: x.Error}
	}
	return e
}

// opCtx bounds calls to Redis by the client's OperationTimeout unless ctx
// ends sooner.
func (i *Ingester) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := i.copts.OperationTimeout
	if dl, ok := ctx.Deadline(); (ok && time.Until(dl) < d) || d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
