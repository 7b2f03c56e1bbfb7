package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// RunOption configures one trigger.
type RunOption func(*runOptions)

type runOptions struct {
	meta    map[string]any
	rawMeta []byte
	policy  task.ConflictPolicy
}

// OnConflict sets what the trigger does when another run holds its key,
// overriding the task's default: task.ConflictReject, ConflictAttach,
// ConflictSupersede or ConflictSignal.
func OnConflict(p task.ConflictPolicy) RunOption {
	return func(o *runOptions) { o.policy = p }
}

func (o *runOptions) resolvePolicy(def *task.Definition) (redisstore.Policy, error) {
	p := o.policy
	if p == "" {
		p = def.OnConflict
	}
	if !p.Valid() {
		return "", fmt.Errorf("task %q: conflict policy %q is not reject, attach, supersede or signal", def.Name, p)
	}
	if p == "" {
		p = task.ConflictReject
	}
	return p, nil
}

// WithMetadata attaches additional metadata to the run; idempotency
// expressions see it as additional_metadata.
func WithMetadata(m map[string]any) RunOption {
	return func(o *runOptions) { o.meta = m }
}

// WithMetadataJSON attaches additional metadata given as a JSON object.
func WithMetadataJSON(raw []byte) RunOption {
	return func(o *runOptions) { o.rawMeta = raw }
}

func (o *runOptions) metaJSON() ([]byte, error) {
	if o.rawMeta != nil {
		return o.rawMeta, nil
	}
	if o.meta == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(o.meta)
}

// RunNoWait triggers a run of t and returns at once with a reference to it.
// When another run owns the idempotency key, nothing is created and the
// error is an *IdempotencyCollisionError naming that run.
func RunNoWait[I, O any](ctx context.Context, c *Client, t *task.Task[I, O], input I, opts ...RunOption) (*RunRef[O], error) {
	raw, err := t.EncodeInput(input)
	if err != nil {
		return nil, fmt.Errorf("task %q: encode input: %w", t.Name(), err)
	}
	h, err := c.TriggerJSON(ctx, t.Definition(), raw, opts...)
	if err != nil {
		return nil, err
	}
	return &RunRef[O]{RunHandle: h}, nil
}

// Run triggers a run of t and waits for its result.
func Run[I, O any](ctx context.Context, c *Client, t *task.Task[I, O], input I, opts ...RunOption) (O, error) {
	ref, err := RunNoWait(ctx, c, t, input, opts...)
	if err != nil {
		var zero O
		return zero, err
	}
	return ref.Result(ctx)
}

// RunMany triggers one run per input in a single round trip. The returned
// refs line up with inputs; a trigger that collided has a nil ref and is
// listed in the *BulkCollisionError, which names each existing owner.
// Duplicates inside the batch collide with the first of them. An input that
// is invalid fails the whole batch before anything is written.
func RunMany[I, O any](ctx context.Context, c *Client, t *task.Task[I, O], inputs []I, opts ...RunOption) ([]*RunRef[O], error) {
	raws := make([]Trigger, len(inputs))
	for i, in := range inputs {
		b, err := t.EncodeInput(in)
		if err != nil {
			return nil, &BatchItemError{Index: i, Err: fmt.Errorf("encode input: %w", err)}
		}
		raws[i] = Trigger{Input: b}
	}
	hs, err := c.TriggerManyJSON(ctx, t.Definition(), raws, opts...)
	refs := make([]*RunRef[O], len(hs))
	for i, h := range hs {
		if h != nil {
			refs[i] = &RunRef[O]{RunHandle: h}
		}
	}
	return refs, err
}

// Trigger is one untyped trigger of a batch.
type Trigger struct {
	Input json.RawMessage
	// Metadata overrides the batch's metadata when set.
	Metadata json.RawMessage
}

// TriggerJSON triggers def with a JSON input. It is the untyped form of
// RunNoWait used by the HTTP API and event ingestion.
func (c *Client) TriggerJSON(ctx context.Context, def *task.Definition, input []byte, opts ...RunOption) (*RunHandle, error) {
	var o runOptions
	for _, f := range opts {
		f(&o)
	}
	meta, err := o.metaJSON()
	if err != nil {
		return nil, fmt.Errorf("task %q: encode metadata: %w", def.Name, err)
	}
	policy, err := o.resolvePolicy(def)
	if err != nil {
		return nil, err
	}
	p, err := c.prepare(def, input, meta, policy)
	if err != nil {
		return nil, err
	}
	res, err := c.enqueue(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("task %q: trigger: %w", def.Name, c.unavailable(ctx, err))
	}
	if res.Outcome == redisstore.TriggerRejected {
		return nil, c.collision(def, p.Key, res.Owner)
	}
	return c.triggered(p, res), nil
}

// triggered turns an enqueue result that did not fail into a handle: the
// new run, or the owner the trigger was attached, signalled or debounced to.
func (c *Client) triggered(p *redisstore.EnqueueParams, res redisstore.EnqueueResult) *RunHandle {
	switch res.Outcome {
	case redisstore.TriggerCreated:
		h := c.Handle(p.RunID)
		h.outcome, h.superseded = OutcomeCreated, res.Superseded
		return h
	case redisstore.TriggerAttached:
		h := c.Handle(res.Owner)
		h.outcome = OutcomeAttached
		return h
	case redisstore.TriggerSignalled:
		h := c.Handle(res.Owner)
		h.outcome, h.signalID = OutcomeSignalled, res.SignalID
		return h
	default:
		h := c.Handle(res.Owner)
		h.outcome = OutcomeDebounced
		return h
	}
}

// TriggerManyJSON is the untyped form of RunMany.
func (c *Client) TriggerManyJSON(ctx context.Context, def *task.Definition, triggers []Trigger, opts ...RunOption) ([]*RunHandle, error) {
	if len(triggers) > c.opts.MaxBatch {
		return nil, fmt.Errorf("task %q: %w", def.Name, &LimitError{What: "batch", Size: len(triggers), Limit: c.opts.MaxBatch})
	}
	var o runOptions
	for _, f := range opts {
		f(&o)
	}
	meta, err := o.metaJSON()
	if err != nil {
		return nil, fmt.Errorf("task %q: encode metadata: %w", def.Name, err)
	}
	policy, err := o.resolvePolicy(def)
	if err != nil {
		return nil, err
	}
	ps := make([]*redisstore.EnqueueParams, len(triggers))
	for i, tr := range triggers {
		m := meta
		if tr.Metadata != nil {
			m = tr.Metadata
		}
		if ps[i], err = c.prepare(def, tr.Input, m, policy); err != nil {
			return nil, &BatchItemError{Index: i, Err: err}
		}
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	results, errs := c.store.EnqueueBatch(ctx, ps)
	hs := make([]*RunHandle, len(triggers))
	var bulk BulkCollisionError
	var other []error
	for i, r := range results {
		switch {
		case errs[i] != nil:
			other = append(other, &BatchItemError{Index: i, Err: c.unavailable(ctx, errs[i])})
		case r.Outcome != redisstore.TriggerRejected:
			hs[i] = c.triggered(ps[i], r)
		default:
			bulk.Collisions = append(bulk.Collisions, BulkCollision{Index: i, IdempotencyCollisionError: c.collision(def, ps[i].Key, r.Owner)})
		}
	}
	if len(bulk.Collisions) > 0 {
		other = append(other, &bulk)
	}
	return hs, errors.Join(other...)
}

func (c *Client) collision(def *task.Definition, key, owner string) *IdempotencyCollisionError {
	return &IdempotencyCollisionError{Task: def.Name, Key: key, ExistingRunID: owner, Owner: c.Handle(owner)}
}

// prepare checks a trigger's limits, derives its key and builds the
// parameters of the enqueue script. It writes nothing.
func (c *Client) prepare(def *task.Definition, input, meta []byte, policy redisstore.Policy) (*redisstore.EnqueueParams, error) {
	if len(input) == 0 {
		input = []byte("{}")
	}
	if len(input) > c.opts.MaxInputBytes {
		return nil, fmt.Errorf("task %q: %w", def.Name, &LimitError{What: "input", Size: len(input), Limit: c.opts.MaxInputBytes})
	}
	if len(meta) > c.opts.MaxMetadataBytes {
		return nil, fmt.Errorf("task %q: %w", def.Name, &LimitError{What: "additional_metadata", Size: len(meta), Limit: c.opts.MaxMetadataBytes})
	}
	if err := idempotency.CheckDepth("input", input, c.opts.MaxInputDepth); err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, err)
	}
	if err := idempotency.CheckDepth("additional_metadata", meta, c.opts.MaxInputDepth); err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, err)
	}
	// Deriving the key checks that input and metadata are JSON objects, so
	// only a task without a key needs the check on its own.
	if !def.Deduplicated() {
		if err := validJSON("input", input); err != nil {
			return nil, fmt.Errorf("task %q: %w", def.Name, err)
		}
		if err := validJSON("additional_metadata", meta); err != nil {
			return nil, fmt.Errorf("task %q: %w", def.Name, err)
		}
		if m := bytes.TrimLeft(meta, " \t\r\n"); len(m) > 0 && m[0] != '{' {
			return nil, fmt.Errorf("task %q: %w", def.Name, &idempotency.InputError{Message: "additional_metadata must be a JSON object"})
		}
	}
	key, err := def.Key(input, meta)
	if err != nil {
		return nil, fmt.Errorf("task %q: idempotency key: %w", def.Name, err)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	p := &redisstore.EnqueueParams{
		RunID: id.String(), Task: def.Name, Input: input, Meta: meta,
		Strategy: redisstore.StrategyNone, Retries: def.Retries, MaxDeliveries: def.MaxDeliveries,
		Timeout: def.Timeout, Retention: c.opts.Retention, Now: c.opts.Clock.Now(),
		Policy: policy, MaxSignals: c.opts.MaxSignals,
	}
	if policy == redisstore.PolicySignal {
		sid, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		p.SignalID = sid.String()
	}
	if idem := def.Idempotency; idem != nil {
		p.Key = key
		p.Strategy = idem.Strategy
		p.Hold = idem.Hold()
		p.Retain = idem.Retain
	}
	return p, nil
}

// validJSON says, as an *idempotency.InputError naming what, when data is
// not JSON.
func validJSON(what string, data []byte) error {
	if !json.Valid(data) {
		return &idempotency.InputError{Message: what + " is not valid JSON"}
	}
	return nil
}
