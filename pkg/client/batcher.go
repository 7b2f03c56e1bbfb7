package client

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// triggerBatcher coalesces the triggers that goroutines of one Client make
// at the same time into one call of the enqueue script (see
// engine.Batcher and Store.EnqueueBatch): under load, one round trip
// and one script run carry many triggers, so Redis and the client spend far
// less per trigger; a lone trigger is sent at once. Each trigger is still
// atomic with its own outcome, and the triggers of one batch are handled in
// the order they were queued (those that ask for durable acknowledgement
// after the others, one group per level, each sharing one WAIT).
// Options.DisableTriggerBatching turns it off.
type triggerBatcher = engine.Batcher[*engine.EnqueueParams, engine.EnqueueResult]

// newTriggerBatcher returns nil when batching is disabled.
func newTriggerBatcher(st engine.Engine, opts Options) (*triggerBatcher, error) {
	if opts.DisableTriggerBatching {
		return nil, nil
	}
	return engine.NewBatcher(engine.BatcherOptions{Timeout: opts.OperationTimeout}, st.EnqueueBatch)
}

// enqueue sends one trigger, batched unless batching is disabled. A batch
// is bounded by OperationTimeout itself, but a batched trigger is bounded
// as well: it may wait for a free sender first, while the batches in
// flight wait for a Redis that does not answer. That bound is the
// batcher's (DoWithin), which a trigger pays less for than for a context
// with a timer of its own.
func (c *Client) enqueue(ctx context.Context, p *engine.EnqueueParams) (res engine.EnqueueResult, err error) {
	defer func() {
		if err == nil {
			c.countDuplicate(p, res)
		}
	}()
	if c.triggers != nil {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < c.opts.OperationTimeout {
			return c.triggers.Do(ctx, p)
		}
		return c.triggers.DoWithin(ctx, p, c.opts.OperationTimeout)
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	return c.store.Enqueue(ctx, p)
}

// countDuplicate counts in the run statistics a trigger that created no
// run because its key was held: rejected, attached to the owner,
// signalled to it or debounced into it.
func (c *Client) countDuplicate(p *engine.EnqueueParams, r engine.EnqueueResult) {
	switch r.Outcome {
	case engine.TriggerRejected, engine.TriggerAttached, engine.TriggerSignalled, engine.TriggerDebounced:
		c.stats.Duplicate(c.opts.Clock.Now(), p.Task)
	}
}
