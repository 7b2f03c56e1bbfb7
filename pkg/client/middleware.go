package client

import (
	"context"
	"encoding/json"
)

// TriggerRequest is what a trigger sends: one task, and one input and
// metadata per run (one for RunNoWait, several for RunMany). A
// TriggerMiddleware may change Metadata, to carry a trace context to the
// worker; it must keep the number of triggers.
type TriggerRequest struct {
	// Task is the task's name.
	Task     string
	Triggers []Trigger
}

// TriggerFunc sends a trigger request. The handles line up with the
// request's triggers; one that collided, or failed, is nil, and err says
// why (an *IdempotencyCollisionError or a *DurabilityError for a lone
// trigger, which then has no handle; a *BulkCollisionError or
// *BatchItemError in a batch, whose triggers that fell short of their
// durability keep their handles beside one *DurabilityError).
type TriggerFunc func(ctx context.Context, req *TriggerRequest) ([]*RunHandle, error)

// TriggerMiddleware wraps every trigger the client sends: RunNoWait, Run,
// RunMany and their untyped forms, so the HTTP API's and the command
// line's too. It runs after the trigger's options are resolved and before
// its limits are checked and its key derived, so metadata it adds counts
// toward the limits and is seen by the key expression. Use it for tracing
// (docs/operations.md#tracing) and metrics.
type TriggerMiddleware func(next TriggerFunc) TriggerFunc

// chainTriggers wraps send in mw, the first outermost.
func chainTriggers(mw []TriggerMiddleware, send TriggerFunc) TriggerFunc {
	for i := len(mw) - 1; i >= 0; i-- {
		send = mw[i](send)
	}
	return send
}

// request builds the request of triggers sharing one metadata default.
func request(task string, triggers []Trigger, meta json.RawMessage) *TriggerRequest {
	req := &TriggerRequest{Task: task, Triggers: make([]Trigger, len(triggers))}
	for i, tr := range triggers {
		req.Triggers[i] = tr
		if tr.Metadata == nil {
			req.Triggers[i].Metadata = meta
		}
	}
	return req
}
