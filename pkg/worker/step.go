package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Step runs fn once per run: the first completion's result is stored in
// Redis, and a retried or redelivered attempt gets it back without calling
// fn again. stepID is stable across attempts; use it as the idempotency key
// of the external call fn makes. A failed fn stores nothing, so it runs
// again on the next attempt.
func (c *runContext) Step(name string, fn func(ctx context.Context, stepID string) (any, error)) (json.RawMessage, error) {
	if name == "" {
		return nil, errors.New("worker: step name must not be empty")
	}
	if strings.HasPrefix(name, "#") {
		return nil, fmt.Errorf("worker: step name %q: names starting with # are taskq's own (durable waits)", name)
	}
	stored, ok, err := c.store.StepResult(c, c.runID, name)
	if err != nil {
		return nil, fmt.Errorf("worker: step %q: %w", name, err)
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
		return nil, fmt.Errorf("worker: step %q: encode result: %w", name, err)
	}
	return c.store.SaveStepResult(c, c.runID, name, raw)
}

// Step is the typed form of Context.Step.
func Step[T any](ctx Context, name string, fn func(ctx context.Context, stepID string) (T, error)) (T, error) {
	var out T
	raw, err := ctx.Step(name, func(ctx context.Context, stepID string) (any, error) { return fn(ctx, stepID) })
	if err != nil {
		return out, err
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("worker: step %q: decode stored result: %w", name, err)
	}
	return out, nil
}
