package events

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/pkg/client"
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
	OutcomeCreated = admission.EventRunCreated
	// OutcomeDeduplicated: another run held the task's key; RunID names it
	// and no run was created.
	OutcomeDeduplicated = admission.EventRunDeduplicated
	// OutcomeDebounced: the key is held by a debounced run that had not
	// started; that run (RunID) now has this event's payload and its window
	// starts again.
	OutcomeDebounced = admission.EventRunDebounced
	// OutcomeError: the task's expression failed on this payload (or its
	// registered definition could not be built); Error says why.
	OutcomeError = admission.EventRunError
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
	link  *clientlink.Link
	store admission.EventStore
	adm   admission.Config
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
	link := clientlink.Of(c)
	i := &Ingester{c: c, link: link, store: link.Engine, opts: opts, log: opts.Logger, adm: link.Admission}
	i.subs.ttl = opts.RefreshInterval
	return i, nil
}

// Input is one event of a PushMany batch.
type Input struct {
	Key      string
	Payload  json.RawMessage
	Metadata json.RawMessage
}

// Push stores an event and triggers every task subscribed to key. Each
// task's idempotency key is derived with input = payload and
// additional_metadata = metadata. A task whose key is held gets no run and
// no error: the event says which run it was deduplicated to. A task whose
// expression fails on this payload is recorded with the error; the others
// still run. Payload and metadata must be JSON objects (nil means {}). A
// *FanoutPendingError says the event is stored and a worker will finish
// its fan-out.
func (i *Ingester) Push(ctx context.Context, key string, payload json.RawMessage, metadata json.RawMessage) (*client.EventInfo, error) {
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
	i.wakeWaiters(ctx, []string{key})
	i.maybeSweep(ctx)
	ev := eventOf(p, runs)
	i.log.Debug("taskq: event ingested", "event", ev.ID, "key", ev.Key, "tasks", len(ev.Runs))
	return ev, nil
}

// PushMany pushes a batch of events in one round trip (an event whose runs
// live in other partitions takes its own steps). Every event is
// validated before anything is written; an invalid one fails the batch
// with an *InvalidEventError naming its index, and a batch over its limit
// with a *client.LimitError. Events are pushed in order, so a later event
// is deduplicated to a run an earlier one of the batch created. Each event
// is stored with its runs as Push stores it; when Redis fails some of
// them, the others are still returned (the failed ones as nil) with a
// *client.BatchItemError per failure (its Index the event's position).
func (i *Ingester) PushMany(ctx context.Context, in []Input) ([]*client.EventInfo, error) {
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
	ps := make([]*admission.EventParams, len(in))
	for n := range in {
		p, err := i.prepare(ctx, in[n])
		if err != nil {
			return nil, err
		}
		ps[n] = p
	}
	res, errs := i.store.PushEvents(ctx, ps)
	out := make([]*client.EventInfo, len(in))
	var failed []error
	var keys []string
	for n := range ps {
		if errs[n] != nil {
			failed = append(failed, &client.BatchItemError{Index: n, Err: errs[n]})
			continue
		}
		out[n] = eventOf(ps[n], res[n])
		if !slices.Contains(keys, in[n].Key) {
			keys = append(keys, in[n].Key)
		}
	}
	i.wakeWaiters(ctx, keys)
	i.maybeSweep(ctx)
	i.log.Debug("taskq: events ingested", "events", len(in), "failed", len(failed))
	return out, errors.Join(failed...)
}

// Replay pushes a stored event again, as Push would with its key, payload
// and metadata: a new event, whose subscribed tasks derive their keys
// anew, so a task whose key is still held is deduplicated to its owner and
// the others get new runs. The event replayed is not changed. A missing
// (or expired) event fails with ErrEventNotFound.
func (i *Ingester) Replay(ctx context.Context, id string) (*client.EventInfo, error) {
	ev, err := i.c.Inspector().GetEvent(ctx, id)
	if err != nil {
		return nil, err
	}
	return i.Push(ctx, ev.Key, ev.Payload, ev.Metadata)
}

// validate checks an event: its key here, its payload and metadata by
// admission (internal/admission), with the limits of every trigger. Empty
// payload and metadata become {}. It writes nothing.
func (i *Ingester) validate(index int, in *Input) error {
	if err := checkKey(in.Key); err != "" {
		return &InvalidEventError{Index: index, Field: "key", Message: err}
	}
	in.Payload, in.Metadata = orEmpty(in.Payload), orEmpty(in.Metadata)
	var (
		le *admission.LimitError
		ie *admission.InvalidError
	)
	switch err := i.adm.CheckEvent(in.Payload, in.Metadata); {
	case errors.As(err, &le):
		field := eventField(le.Field)
		return &InvalidEventError{Index: index, Field: field, Message: fmt.Sprintf("is %d bytes, over the limit of %d", le.Size, le.Limit),
			Err: &client.LimitError{What: field, Size: le.Size, Limit: le.Limit}}
	case errors.As(err, &ie):
		return &InvalidEventError{Index: index, Field: eventField(ie.Field), Message: ie.Problem}
	default:
		return err
	}
}

// eventField names admission's fields as an event does.
func eventField(f string) string {
	if f == admission.FieldInput {
		return "payload"
	}
	return "metadata"
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return json.RawMessage("{}")
	}
	return t
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

// prepare resolves the event's subscribed tasks and has admission build
// their runs, as it builds a direct trigger's. It writes nothing.
func (i *Ingester) prepare(ctx context.Context, in Input) (*admission.EventParams, error) {
	subs, err := i.subscribers(ctx, in.Key)
	if err != nil {
		return nil, fmt.Errorf("events: read subscriptions: %w", err)
	}
	return i.adm.BuildEvent(admission.Event{
		Key: in.Key, Payload: in.Payload, Metadata: in.Metadata, Now: i.link.Clock.Now(), Retention: i.opts.Retention,
	}, subs)
}

func eventOf(p *admission.EventParams, runs []admission.EventRun) *client.EventInfo {
	return fromRecord(&admission.EventRecord{ID: p.ID, Key: p.Key, Payload: p.Payload, Meta: p.Meta, Created: p.Now, Runs: runs})
}

func fromRecord(r *admission.EventRecord) *client.EventInfo {
	e := &client.EventInfo{
		ID: r.ID, Key: r.Key, Payload: json.RawMessage(r.Payload), Metadata: json.RawMessage(r.Meta),
		CreatedAt: r.Created.UTC(), Runs: make([]client.EventTaskRun, len(r.Runs)),
	}
	for n, x := range r.Runs {
		e.Runs[n] = client.EventTaskRun{Task: x.Task, Outcome: x.Outcome, RunID: x.RunID, IdempotencyKey: x.IdempotencyKey, Error: x.Error}
	}
	return e
}

// opCtx bounds calls to Redis by the client's OperationTimeout unless ctx
// ends sooner.
func (i *Ingester) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := i.link.OperationTimeout
	if dl, ok := ctx.Deadline(); (ok && time.Until(dl) < d) || d <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}

// wakeWaiters wakes the runs whose handlers wait durably for an event of
// keys (worker.WaitForEvent), once the events are stored, then forgets
// their registrations: each looks for its match when it runs again, and
// registers again if none passed its filter. A wake that fails leaves the
// registrations for the next push, or for a worker's janitor once
// engine.EventWakeGrace has passed (as when this process dies first); the
// push has succeeded either way.
func (i *Ingester) wakeWaiters(ctx context.Context, keys []string) {
	ws, err := i.store.EventWaiters(ctx, keys)
	if err != nil {
		i.log.Warn("taskq: could not read the runs waiting for these events; a worker wakes them shortly",
			"keys", keys, "err", err)
		return
	}
	if len(ws) == 0 {
		return
	}
	ids := make([]string, len(ws))
	for n, w := range ws {
		ids[n] = w.RunID
	}
	if err := i.store.WakeRuns(ctx, ids); err != nil {
		i.log.Warn("taskq: could not wake the runs waiting for these events; a worker wakes them shortly",
			"keys", keys, "runs", len(ids), "err", err)
		return
	}
	if err := i.store.ForgetEventWaiters(ctx, ws); err != nil {
		i.log.Warn("taskq: could not forget the runs woken for these events; the next event of their keys wakes them again",
			"keys", keys, "runs", len(ids), "err", err)
	}
}
