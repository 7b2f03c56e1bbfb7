package worker

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// recoverer takes over deliveries whose lease lapsed: their worker died or
// stalled past LeaseDuration without a heartbeat. It runs inside the fetch
// loop, which owns the free handler slots, every LeaseDuration/2.
type recoverer struct {
	w    *Worker
	last time.Time
	next int // task to start with, so every stream gets its turn
}

// reclaim claims up to n lapsed deliveries, or none if it is not yet time.
func (r *recoverer) reclaim(ctx context.Context, n int) []redisstore.Delivery {
	w := r.w
	now := time.Now()
	if now.Sub(r.last) < w.opts.LeaseDuration/2 {
		return nil
	}
	r.last = now
	var out []redisstore.Delivery
	for i := 0; i < len(w.names) && len(out) < n; i++ {
		t := w.names[(r.next+i)%len(w.names)]
		cctx, cancel := context.WithTimeout(ctx, w.opts.OperationTimeout)
		ds, err := w.store.AutoClaim(cctx, t, w.opts.Name, w.opts.LeaseDuration, n-len(out))
		cancel()
		if err != nil {
			w.log.Warn("taskq: reclaiming lapsed runs failed", "task", t, "err", err)
			continue
		}
		if len(ds) > 0 {
			w.log.Info("taskq: reclaimed runs whose lease lapsed", "task", t, "count", len(ds))
		}
		out = append(out, ds...)
	}
	r.next++
	return out
}
