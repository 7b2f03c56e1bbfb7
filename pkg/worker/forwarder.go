package worker

import (
	"context"
	"time"
)

// forwardInterval bounds how late a retry can be queued.
const forwardInterval = 250 * time.Millisecond

// forward queues runs whose retry backoff has elapsed. It sleeps until the
// earliest scheduled retry, at most forwardInterval.
func (w *Worker) forward(quit <-chan struct{}) {
	wait := time.Duration(0)
	for sleep(quit, wait) {
		wait = forwardInterval
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.OperationTimeout)
		n, err := w.store.Promote(ctx, w.opts.Clock.Now(), 100)
		if err == nil && n == 100 {
			wait = 0 // more are due
		} else if err == nil {
			if next, ok, _ := w.store.NextRetry(ctx); ok {
				if d := next.Sub(w.opts.Clock.Now()); d < wait {
					wait = max(d, time.Millisecond)
				}
			}
		} else {
			w.log.Warn("taskq: queueing due retries failed", "err", err)
		}
		cancel()
	}
}
