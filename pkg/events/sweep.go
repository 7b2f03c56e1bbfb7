package events

import (
	"context"
	"time"
)

// sweepAll removes the entries of expired events from the events index of
// every partition. Event records expire on their own after Retention; Push
// and PushMany sweep at most once a minute. It returns how many entries it
// removed.
func (i *Ingester) sweepAll(ctx context.Context) (int, error) {
	parts, err := i.store.PartitionCount(ctx)
	if err != nil {
		return 0, err
	}
	removed := 0
	for part := range parts {
		r, err := i.sweep(ctx, part)
		removed += r
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// sweep sweeps the events index of partition part.
func (i *Ingester) sweep(ctx context.Context, part int) (int, error) {
	cutoff := i.link.Clock.Now().Add(-i.opts.Retention)
	removed, offset := 0, 0
	for n := 0; n < sweepBatches; n++ {
		r, looked, err := i.store.SweepEvents(ctx, part, cutoff, offset, sweepBatch)
		if err != nil {
			return removed, err
		}
		removed += r
		// Entries still alive (a clock running behind) stay; skip them.
		offset += looked - r
		if looked < sweepBatch {
			break
		}
	}
	return removed, nil
}

// maybeSweep sweeps when the last sweep is over sweepInterval ago. A failed
// sweep is only logged: the push it follows has succeeded.
func (i *Ingester) maybeSweep(ctx context.Context) {
	now := i.link.Clock.Now().UnixMilli()
	last := i.lastSweep.Load()
	if now-last < sweepInterval.Milliseconds() || !i.lastSweep.CompareAndSwap(last, now) {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if removed, err := i.sweepAll(ctx); err != nil {
		i.log.Warn("taskq: sweeping the events index failed", "err", err)
	} else if removed > 0 {
		i.log.Debug("taskq: swept expired events from the index", "removed", removed)
	}
}
