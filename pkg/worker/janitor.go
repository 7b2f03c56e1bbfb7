package worker

import (
	"context"
	"math/rand/v2"
	"time"
)

// sweep removes index entries whose run records have expired, in batches
// with a cursor, starting at a random offset in time so a fleet of workers
// does not sweep in lockstep.
func (w *Worker) sweep(quit <-chan struct{}) {
	every := w.opts.SweepInterval
	first := time.Duration(rand.Int64N(int64(every)))
	for wait := first; sleep(quit, wait); wait = every {
		// Entries younger than one interval belong to runs that cannot
		// have expired yet; skipping them keeps each sweep short.
		cutoff := w.opts.Clock.Now().Add(-every)
		offset := 0
		for {
			ctx, cancel := context.WithTimeout(context.Background(), w.opts.OperationTimeout)
			removed, looked, err := w.store.SweepRuns(ctx, cutoff, offset, 500)
			cancel()
			if err != nil {
				w.log.Warn("taskq: sweeping runs index failed", "err", err)
				break
			}
			offset += looked - removed
			if looked < 500 {
				break
			}
			select {
			case <-quit:
				return
			default:
			}
		}
	}
}
