package worker

import (
	"context"
)

// recover takes over deliveries whose lease lapsed (their worker died or
// stalled past LeaseDuration) and runs them here, as many as there are
// free slots.
func (w *Worker) recover(quit <-chan struct{}) {
	for sleep(quit, w.opts.LeaseDuration/2) {
		for _, t := range w.names {
			n := 0
		take:
			for n < w.opts.Concurrency {
				select {
				case <-w.slots:
					n++
				default:
					break take
				}
			}
			if n == 0 {
				break
			}
			ctx, cancel := context.WithTimeout(context.Background(), w.opts.LeaseDuration)
			ds, err := w.store.AutoClaim(ctx, t, w.opts.Name, w.opts.LeaseDuration, n)
			cancel()
			if err != nil {
				w.log.Warn("taskq: reclaiming lapsed runs failed", "task", t, "err", err)
				ds = nil
			}
			w.releaseSlots(n - len(ds))
			if len(ds) > 0 {
				w.log.Info("taskq: reclaimed runs whose lease lapsed", "task", t, "count", len(ds))
			}
			w.dispatch(ds)
		}
	}
}
