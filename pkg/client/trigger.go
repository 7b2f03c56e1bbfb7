package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// RunOption configures one trigger.
type RunOption func(*runOptions)

type runOptions struct {
	meta    any
	rawMeta []byte
	policy  task.ConflictPolicy
	// durability is the trigger's own level (WithDurability), nil when
	// it has none.
	durability *task.Durability
	// source names where the trigger came from (WithSource).
	source string
	// schedule queues the run later (RunAt, RunIn); nil: at once.
	schedule *admission.Schedule
	// childName and detached are a child run's (ChildName, Detached).
	childName string
	detached  bool
	// priority is the trigger's (WithPriority), 0 for the task's.
	priority    int
	prioritySet bool
}

// WithPriority gives the run priority p, from 1 (the lowest, the default)
// to 3 (the highest), in place of the task's (task.Options.Priority). A
// worker starts a task's queued runs of a higher priority first, and a run
// of a lower priority waits behind a bounded number of them (see
// docs/scheduling.md). A p outside 1 to 3 fails the trigger with a
// *task.ConfigError naming it; nothing is created.
func WithPriority(p int) RunOption {
	return func(o *runOptions) { o.priority, o.prioritySet = p, true }
}

// checkPriority refuses a priority given with WithPriority outside 1 to
// 3 (0 too, which admission would take for the task's).
func (o *runOptions) checkPriority(def *task.Definition) error {
	if o.prioritySet && (o.priority < engine.PriorityDefault || o.priority > engine.PriorityMax) {
		return &task.ConfigError{Task: def.Name, Field: "priority",
			Message: fmt.Sprintf("%d is not 1, 2 or %d", o.priority, engine.PriorityMax)}
	}
	return nil
}

// OnConflict sets what the trigger does when another run holds its key,
// overriding the task's default: task.ConflictReject, ConflictAttach,
// ConflictSupersede or ConflictSignal.
func OnConflict(p task.ConflictPolicy) RunOption {
	return func(o *runOptions) { o.policy = p }
}

func (o *runOptions) resolvePolicy(def *task.Definition) (engine.Policy, error) {
	p := o.policy
	if p == "" {
		p = def.OnConflict
	}
	if !engine.ValidPolicy(p) {
		return "", fmt.Errorf("task %q: conflict policy %q is not reject, attach, supersede or signal", def.Name, p)
	}
	if p == "" {
		p = task.ConflictReject
	}
	return p, nil
}

// WithMetadata attaches additional metadata to the run; idempotency
// expressions see it as additional_metadata.
//
// m is encoded as JSON, or taken as it is when it is a json.RawMessage or
// a []byte (a JSON object already encoded).
func WithMetadata(m any) RunOption {
	return func(o *runOptions) {
		switch raw := m.(type) {
		case json.RawMessage:
			o.rawMeta = raw
		case []byte:
			o.rawMeta = raw
		default:
			o.meta = m
		}
	}
}

func (o *runOptions) metaJSON() ([]byte, error) {
	if o.rawMeta != nil {
		return o.rawMeta, nil
	}
	if o.meta == nil {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(o.meta)
	if err == nil && string(raw) == "null" {
		// A nil map is no metadata, as before WithMetadata took any.
		return []byte("{}"), nil
	}
	return raw, err
}

// RunNoWait triggers a run of t and returns at once with a reference to it.
// When another run owns the idempotency key, nothing is created and the
// error is an *IdempotencyCollisionError naming that run. It returns a
// reference or an error, never both: a durable trigger whose write did not
// reach its level returns a *DurabilityError whose Run is the run it wrote
// (client.Ref[O](c, err.Run.ID()) is its typed reference).
func RunNoWait[I, O any](ctx context.Context, c *Client, t *task.Task[I, O], input I, opts ...RunOption) (*RunRef[O], error) {
	raw, err := json.Marshal(input)
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

// RunMany triggers one run per input in a single round trip. An input that
// is invalid fails the whole batch before anything is written (a
// *BatchItemError naming it, and no refs). Otherwise the batch returns a
// partial result: the refs line up with inputs, and the error, when there
// is one, joins what befell some of them. A trigger that collided has a
// nil ref and is listed in the *BulkCollisionError, which names each
// existing owner (duplicates inside the batch collide with the first of
// them); one that Redis failed has a nil ref and a *BatchItemError. A
// durable batch whose writes did not all reach their level keeps the refs
// of the triggers that fell short, listed in one *DurabilityError.
func RunMany[I, O any](ctx context.Context, c *Client, t *task.Task[I, O], inputs []I, opts ...RunOption) ([]*RunRef[O], error) {
	raws := make([]Trigger, len(inputs))
	for i, in := range inputs {
		b, err := json.Marshal(in)
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
// RunNoWait, used by the HTTP API; like RunNoWait it returns a handle or
// an error, never both (a *DurabilityError's Run is the run it wrote).
func (c *Client) TriggerJSON(ctx context.Context, def *task.Definition, input []byte, opts ...RunOption) (*RunHandle, error) {
	var o runOptions
	for _, f := range opts {
		f(&o)
	}
	meta, err := o.metaJSON()
	if err != nil {
		return nil, fmt.Errorf("task %q: encode metadata: %w", def.Name, err)
	}
	if err := o.notChild(def); err != nil {
		return nil, err
	}
	policy, err := o.resolvePolicy(def)
	if err != nil {
		return nil, err
	}
	if err := o.checkPriority(def); err != nil {
		return nil, err
	}
	if err := engine.CheckSource(o.source); err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, err)
	}
	dur, err := c.resolveDurability(def, o.durability)
	if err != nil {
		return nil, err
	}
	if len(c.opts.TriggerMiddleware) == 0 {
		// What send does at the end of an empty chain, without the
		// request, the closure and the slice of one handle it costs.
		return c.triggerOne(ctx, def, Trigger{Input: input, Metadata: meta}, policy, dur, o.source, o.schedule, o.priority)
	}
	send := func(ctx context.Context, req *TriggerRequest) ([]*RunHandle, error) {
		if len(req.Triggers) != 1 {
			return nil, fmt.Errorf("client: task %q: a trigger middleware sent %d triggers for one", def.Name, len(req.Triggers))
		}
		h, err := c.triggerOne(ctx, def, req.Triggers[0], policy, dur, o.source, o.schedule, o.priority)
		return []*RunHandle{h}, err
	}
	hs, err := chainTriggers(c.opts.TriggerMiddleware, send)(ctx, request(def.Name, []Trigger{{Input: input}}, meta))
	switch {
	case err != nil:
		return nil, err
	case len(hs) != 1 || hs[0] == nil:
		return nil, fmt.Errorf("client: task %q: a trigger middleware returned %d handles and no error for one trigger", def.Name, len(hs))
	}
	return hs[0], nil
}

// triggerOne admits and enqueues one trigger.
func (c *Client) triggerOne(ctx context.Context, def *task.Definition, tr Trigger, policy engine.Policy, dur task.Durability, source string, sched *admission.Schedule, priority int) (*RunHandle, error) {
	p, err := c.prepare(def, tr.Input, tr.Metadata, policy, source, sched, priority)
	if err != nil {
		return nil, err
	}
	p.Durability = dur
	res, err := c.enqueue(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("task %q: trigger: %w", def.Name, c.unavailable(ctx, err))
	}
	if res.Outcome == engine.TriggerRejected {
		coll := c.collision(def, p.Key, res.Owner)
		if !c.acknowledged(def.Name, coll.Owner, res.Ack) {
			e := notDurable(def.Name, coll.Owner)
			e.Collision = coll
			return nil, e
		}
		return nil, coll
	}
	h := c.triggered(p, res)
	if !c.acknowledged(def.Name, h, res.Ack) {
		return nil, notDurable(def.Name, h)
	}
	return h, nil
}

// triggered turns an enqueue result that did not fail into a handle: the
// new run, or the owner the trigger was attached, signalled or debounced to.
func (c *Client) triggered(p *engine.EnqueueParams, res engine.EnqueueResult) *RunHandle {
	var h *RunHandle
	switch res.Outcome {
	case engine.TriggerCreated:
		h = c.Handle(p.RunID)
		h.trigger.Outcome, h.trigger.Superseded = OutcomeCreated, res.Superseded
	case engine.TriggerAttached:
		h = c.Handle(res.Owner)
		h.trigger.Outcome = OutcomeAttached
	case engine.TriggerSignalled:
		h = c.Handle(res.Owner)
		h.trigger.Outcome, h.trigger.SignalID = OutcomeSignalled, res.SignalID
	default:
		h = c.Handle(res.Owner)
		h.trigger.Outcome = OutcomeDebounced
	}
	h.trigger.IdempotencyKey = p.Key
	return h
}

// TriggerManyJSON is the untyped form of RunMany, with its partial
// result: handles lining up with triggers (nil for a trigger that collided
// or failed) beside an error listing what befell some of them.
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
	if err := o.notChild(def); err != nil {
		return nil, err
	}
	policy, err := o.resolvePolicy(def)
	if err != nil {
		return nil, err
	}
	if err := o.checkPriority(def); err != nil {
		return nil, err
	}
	if err := engine.CheckSource(o.source); err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, err)
	}
	dur, err := c.resolveDurability(def, o.durability)
	if err != nil {
		return nil, err
	}
	send := func(ctx context.Context, req *TriggerRequest) ([]*RunHandle, error) {
		if len(req.Triggers) != len(triggers) {
			return nil, fmt.Errorf("client: task %q: a trigger middleware sent %d triggers for %d", def.Name, len(req.Triggers), len(triggers))
		}
		return c.triggerMany(ctx, def, req.Triggers, policy, dur, o.source, o.schedule, o.priority)
	}
	return chainTriggers(c.opts.TriggerMiddleware, send)(ctx, request(def.Name, triggers, meta))
}

// triggerMany admits every trigger of a batch, then enqueues them in one
// call. A durable batch shares one WAIT (see redisstore.EnqueueBatch); the
// triggers that fell short are listed in one *DurabilityError.
func (c *Client) triggerMany(ctx context.Context, def *task.Definition, triggers []Trigger, policy engine.Policy, dur task.Durability, source string, sched *admission.Schedule, priority int) ([]*RunHandle, error) {
	ps := make([]*engine.EnqueueParams, len(triggers))
	for i, tr := range triggers {
		var err error
		if ps[i], err = c.prepare(def, tr.Input, tr.Metadata, policy, source, sched, priority); err != nil {
			return nil, &BatchItemError{Index: i, Err: err}
		}
		ps[i].Durability = dur
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	results, errs := c.store.EnqueueBatch(ctx, ps)
	hs := make([]*RunHandle, len(triggers))
	var bulk BulkCollisionError
	var other []error
	var short []*RunHandle
	var shortAt []int
	for i, r := range results {
		var h *RunHandle
		switch {
		case errs[i] != nil:
			other = append(other, &BatchItemError{Index: i, Err: c.unavailable(ctx, errs[i])})
			continue
		}
		c.countDuplicate(ps[i], r)
		switch {
		case r.Outcome != engine.TriggerRejected:
			hs[i] = c.triggered(ps[i], r)
			h = hs[i]
		default:
			coll := c.collision(def, ps[i].Key, r.Owner)
			bulk.Collisions, bulk.Indexes = append(bulk.Collisions, coll), append(bulk.Indexes, i)
			h = coll.Owner
		}
		if !c.acknowledged(def.Name, h, r.Ack) {
			short, shortAt = append(short, h), append(shortAt, i)
		}
	}
	if len(bulk.Collisions) > 0 {
		other = append(other, &bulk)
	}
	if len(short) > 0 {
		other = append(other, notDurableBatch(def.Name, short, shortAt))
	}
	return hs, errors.Join(other...)
}

func (c *Client) collision(def *task.Definition, key, owner string) *IdempotencyCollisionError {
	return &IdempotencyCollisionError{Task: def.Name, Key: key, ExistingRunID: owner, Owner: c.Handle(owner)}
}

// prepare admits a trigger (internal/admission: its limits, its key, the
// parameters of the enqueue script) and words admission's errors as the
// client's. It writes nothing. priority 0 takes the task's.
func (c *Client) prepare(def *task.Definition, input, meta []byte, policy engine.Policy, source string, sched *admission.Schedule, priority int) (*engine.EnqueueParams, error) {
	p, err := c.admission().Admit(admission.Trigger{Def: def, Input: input, Metadata: meta, Policy: policy,
		Now: c.opts.Clock.Now(), Source: source, Schedule: sched, Priority: priority})
	if err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, admissionError(err))
	}
	return p, nil
}

// admission is the admission step configured by the client's options.
func (c *Client) admission() admission.Config {
	return admission.Config{
		Limits: admission.Limits{MaxInputBytes: c.opts.MaxInputBytes, MaxMetadataBytes: c.opts.MaxMetadataBytes,
			MaxInputDepth: c.opts.MaxInputDepth},
		Retention: c.opts.Retention, MaxSignals: c.opts.MaxSignals, MaxScheduleAhead: c.opts.MaxScheduleAhead,
	}
}

// admissionError turns admission's errors into the client's: a size over
// its limit is a *LimitError, bad JSON an *idempotency.Error of kind ErrInput.
func admissionError(err error) error {
	var (
		le *admission.LimitError
		ie *admission.InvalidError
	)
	switch {
	case errors.As(err, &le):
		return &LimitError{What: le.Field, Size: le.Size, Limit: le.Limit}
	case errors.As(err, &ie):
		return &idempotency.Error{Kind: idempotency.ErrInput, Message: ie.Error()}
	}
	return err
}

// validJSON says, as an *idempotency.Error of kind ErrInput naming what, when data is
// not JSON.
func validJSON(what string, data []byte) error {
	if !json.Valid(data) {
		return &idempotency.Error{Kind: idempotency.ErrInput, Message: what + " is not valid JSON"}
	}
	return nil
}
