package worker

import (
	"context"
	"encoding/json"
	"time"
)

// HandlerFunc is a handler as middleware sees it: the run's context and its
// input and output as JSON, whatever the task's types.
type HandlerFunc func(ctx Context, input json.RawMessage) (json.RawMessage, error)

// Middleware wraps every handler of a worker, to add tracing, metrics or
// logging around it without touching the handlers (see
// Options.Middleware). It calls next to run the handler, or returns without
// calling it; the error it returns decides the attempt's outcome as the
// handler's would (NonRetryable included). A panic in a middleware is
// recovered as a handler's is.
type Middleware func(next HandlerFunc) HandlerFunc

// WithContext returns wc with its context.Context replaced by ctx, which
// must derive from wc (ctx comes first, as a context does): for a middleware that passes a context carrying a
// value of its own (a tracing span) to the next handler. Everything else
// (RunID, Step, signals, Logger) is wc's.
func WithContext(ctx context.Context, wc Context) Context {
	return derivedContext{Context: wc, ctx: ctx}
}

type derivedContext struct {
	Context
	ctx context.Context
}

func (d derivedContext) Deadline() (time.Time, bool) { return d.ctx.Deadline() }
func (d derivedContext) Done() <-chan struct{}       { return d.ctx.Done() }
func (d derivedContext) Err() error                  { return d.ctx.Err() }
func (d derivedContext) Value(key any) any           { return d.ctx.Value(key) }

// chain wraps h in mw, the first outermost.
func chain(mw []Middleware, h handlerFunc) handlerFunc {
	if len(mw) == 0 {
		return h
	}
	next := HandlerFunc(func(ctx Context, in json.RawMessage) (json.RawMessage, error) { return h(ctx, in) })
	for i := len(mw) - 1; i >= 0; i-- {
		next = mw[i](next)
	}
	return func(ctx Context, in []byte) ([]byte, error) { return next(ctx, in) }
}
