package worker

import (
	"context"
	"math/rand/v2"
	"time"
)

// janitorInterval is how often index entries of expired runs are swept.
const janitorInterval = time.Minute

// sweep removes index entries whose run records have expired, in batches
// with a cursor, starting at a random offset in time so a fleet of workers
// does not sweep in lockstep.
func (w *Worker) sweep(quit <-chan struct{}) {
	first := time.Duration(rand.Int64N(int64(janitorInterval)))
	for wait := first; sleep(quit, wait); wait = janitorInterval {
		cutoff := w.opts.Clock.Now().Add(-time.Minute)
		offset := 0
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
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
