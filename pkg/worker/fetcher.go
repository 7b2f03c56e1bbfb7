package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// streamReader is what the fetcher reads from Redis.
type streamReader interface {
	ReadGroup(ctx context.Context, consumer string, tasks []string, count int, block time.Duration) ([]redisstore.Delivery, error)
}

// dispatcher takes deliveries, one handler slot taken for each (the
// processor does).
type dispatcher interface {
	dispatch(ds []redisstore.Delivery)
}

// restorer puts back the consumer groups and registrations Redis lost (the
// registrar does).
type restorer interface {
	restore(ctx context.Context) error
}

// fetcher reads new deliveries of every registered task with one blocking
// XREADGROUP, taking as many as there are free handler slots, and
// dispatches them to the processor.
type fetcher struct {
	startStop
	store     streamReader
	restorer  restorer
	slots     slots
	dispatch  dispatcher
	consumer  string
	tasks     []string
	block     time.Duration
	opTimeout time.Duration
	log       *slog.Logger
	// failing is set while the last read of the streams failed (for
	// readiness: see Worker.Handler).
	failing atomic.Bool
}

// Start starts fetching; it is ready at once.
func (f *fetcher) Start(context.Context) error { return f.begin(f.loop) }

func (f *fetcher) loop(quit <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-quit; cancel() }()
	delay := backoff(0) / 2
	for {
		n := f.slots.take(quit)
		if n == 0 {
			return
		}
		// Bounded, so that a stopped Redis holds Shutdown up no longer than
		// this: go-redis itself allows a blocking read 10s past its block.
		rctx, rcancel := context.WithTimeout(ctx, f.block+f.opTimeout)
		ds, err := f.store.ReadGroup(rctx, f.consumer, f.tasks, n, f.block)
		rcancel()
		if err != nil {
			f.slots.release(n)
			if ctx.Err() != nil {
				return
			}
			f.failing.Store(true)
			if strings.HasPrefix(err.Error(), "NOGROUP") {
				// Redis lost its data (a restart without persistence, a
				// flush): put back the groups and the registrations.
				rctx, rcancel := context.WithTimeout(ctx, f.opTimeout)
				rerr := f.restorer.restore(rctx)
				rcancel()
				if rerr == nil {
					f.log.Warn("taskq: consumer groups were missing (did Redis lose its data?); created them again")
					delay = backoff(0) / 2
					if !sleep(quit, delay) {
						return
					}
					continue
				}
				f.log.Warn("taskq: restoring consumer groups and registrations failed", "err", rerr)
			}
			f.log.Warn("taskq: reading task streams failed; retrying", "err", err, "in", delay)
			if !sleep(quit, delay) {
				return
			}
			delay = backoff(delay)
			continue
		}
		f.failing.Store(false)
		delay = backoff(0) / 2
		if len(ds) > n {
			// XREADGROUP's COUNT applies to each stream, so one read of
			// several task streams can bring more deliveries than free
			// slots. The surplus waits here for slots: no more than
			// Concurrency handlers run, and the slot count stays whole.
			if !f.dispatchSurplus(quit, ds, n) {
				return
			}
			continue
		}
		f.slots.release(n - len(ds))
		f.dispatch.dispatch(ds)
	}
}

// dispatchSurplus dispatches the first n deliveries on the slots taken and
// each further one as a slot frees up. It reports false when quit fired
// first; the deliveries not dispatched stay pending and are reclaimed once
// their lease lapses.
func (f *fetcher) dispatchSurplus(quit <-chan struct{}, ds []redisstore.Delivery, n int) bool {
	f.dispatch.dispatch(ds[:n])
	for _, d := range ds[n:] {
		if !f.slots.takeOne(quit) {
			return false
		}
		f.dispatch.dispatch([]redisstore.Delivery{d})
	}
	return true
}
