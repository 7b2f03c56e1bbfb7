package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"
)

// signalBlock is how long one read of a run's signal stream blocks.
const signalBlock = time.Second

// Signal is a payload sent to a running run (client.Signal, or a trigger
// under the signal conflict policy). ID is the same on every attempt.
type Signal struct {
	ID      string
	Payload json.RawMessage
}

// supersededPrefix starts the error of a run a newer run superseded; the
// new run's ID follows (see lib.lua, taskq_supersede).
const supersededPrefix = "superseded by run "

// SupersededError is the cause of a handler's context when a newer run took
// its idempotency key over (conflict policy supersede).
type SupersededError struct {
	RunID string
	By    string
}

func (e *SupersededError) Error() string {
	return fmt.Sprintf("taskq: run %s superseded by run %s", e.RunID, e.By)
}

// Is makes errors.Is(err, ErrRunCancelled) hold: superseding cancels.
func (e *SupersededError) Is(target error) bool { return target == ErrRunCancelled }

// NextSignal blocks until the run's next signal arrives and returns it.
// Signals come in the order they were sent, each once per attempt; a
// redelivered attempt starts again from the first. When the context ends
// it returns the context's cause.
func (c *runContext) NextSignal() (Signal, error) {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	for {
		if err := c.Err(); err != nil {
			return Signal{}, context.Cause(c)
		}
		sigs, err := c.w.store.ReadSignals(c, c.runID, c.sigCursor, 1, signalBlock)
		if err != nil {
			if c.Err() != nil {
				return Signal{}, context.Cause(c)
			}
			return Signal{}, fmt.Errorf("taskq: reading signals: %w", err)
		}
		if len(sigs) > 0 {
			c.sigCursor = sigs[0].Cursor
			return Signal{ID: sigs[0].ID, Payload: sigs[0].Payload}, nil
		}
	}
}

// Signals iterates the run's signals, in order, until the context ends
// (then the loop ends; read context.Cause for why).
func (c *runContext) Signals() iter.Seq[Signal] {
	return func(yield func(Signal) bool) {
		for {
			s, err := c.NextSignal()
			if err != nil || !yield(s) {
				return
			}
		}
	}
}

// Step runs fn once per run: the first completion's result is stored in
// Redis, and a retried or redelivered attempt gets it back without calling
// fn again. stepID is stable across attempts; use it as the idempotency key
// of the external call fn makes. A failed fn stores nothing, so it runs
// again on the next attempt.
func (c *runContext) Step(name string, fn func(ctx context.Context, stepID string) (any, error)) (json.RawMessage, error) {
	if name == "" {
		return nil, errors.New("taskq: step name must not be empty")
	}
	stored, ok, err := c.w.store.StepResult(c, c.runID, name)
	if err != nil {
		return nil, fmt.Errorf("taskq: step %q: %w", name, err)
	}
	if ok {
		return stored, nil
	}
	v, err := fn(c, c.StepID()+"/"+name)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("taskq: step %q: encode result: %w", name, err)
	}
	return c.w.store.SaveStepResult(c, c.runID, name, raw)
}

// Step is the typed form of Context.Step.
func Step[T any](ctx Context, name string, fn func(ctx context.Context, stepID string) (T, error)) (T, error) {
	var out T
	raw, err := ctx.Step(name, func(ctx context.Context, stepID string) (any, error) { return fn(ctx, stepID) })
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("taskq: step %q: decode stored result: %w", name, err)
	}
	return out, nil
}
