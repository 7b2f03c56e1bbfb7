package worker

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// streamReader is what the fetcher reads from Redis.
type streamReader interface {
	ReadGroup(ctx context.Context, part int, consumer string, tasks []string, count int, block time.Duration) ([]engine.Delivery, error)
	ReadByPriority(ctx context.Context, part int, consumer string, tasks []string, count, bound int) ([]engine.Delivery, bool, error)
}

// dispatcher takes deliveries, one handler slot taken for each (the
// processor does).
type dispatcher interface {
	dispatch(ds []engine.Delivery)
}

// restorer puts back the consumer groups and registrations Redis lost (the
// registrar does).
type restorer interface {
	restore(ctx context.Context) error
}

// fetcher reads new deliveries of every registered task and dispatches
// them to the processor. A namespace of one partition is read with one
// blocking XREADGROUP over every task stream, taking as many deliveries as
// there are free handler slots. With P partitions it runs one reader per
// partition, each blocking on an XREADGROUP over its partition's task
// streams (one slot, one command): an idle worker sends P reads per
// FetchBlock and holds P blocking connections. The readers share the
// handler slots fairly: a reader takes no slot before it reads (so none is
// held idle by a reader waiting on an empty partition while another has
// work), and its deliveries then queue for slots one at a time with the
// other readers' (slots.takeOne serves waiters in turn), so under a backlog
// in every partition each partition's runs start in turn. A reader asks
// for as many deliveries as there are free slots, up to Concurrency/P
// (rounded up), and one when none is free: a worker holds at most P
// deliveries beyond those it runs.
//
// Each task has a stream per priority. A blocking read takes from all of
// them at once, the highest priority dispatched first; while runs of a
// priority above the default wait (a read brought one, or the reader has
// just started), a reader reads with ReadByPriority instead, which takes
// each task's runs in priority order and gives a lower priority its turn
// after engine.PriorityBound runs of higher ones (docs/scheduling.md,
// Priorities). So a task whose runs all have the default priority is read
// as before, with one blocking XREADGROUP.
type fetcher struct {
	startStop
	store      streamReader
	restorer   restorer
	slots      slots
	dispatch   dispatcher
	consumer   string
	tasks      []string
	partitions int
	block      time.Duration
	opTimeout  time.Duration
	log        *slog.Logger
	// pauses says which tasks are paused: their streams are not read.
	pauses *pauses
	// failing counts the readers whose last read of the streams failed
	// (for readiness: see Worker.Handler).
	failing atomic.Int32
}

// Start starts fetching; it is ready at once.
func (f *fetcher) Start(context.Context) error { return f.begin(f.loop) }

// isFailing reports whether the last read of some partition failed.
func (f *fetcher) isFailing() bool { return f.failing.Load() > 0 }

func (f *fetcher) loop(quit <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-quit; cancel() }()
	if f.partitions <= 1 {
		f.read(ctx, quit, 0)
		return
	}
	var wg sync.WaitGroup
	for part := range f.partitions {
		wg.Add(1)
		go func() { defer wg.Done(); f.read(ctx, quit, part) }()
	}
	wg.Wait()
}

// read reads partition part until quit closes.
func (f *fetcher) read(ctx context.Context, quit <-chan struct{}, part int) {
	share := (cap(f.slots) + f.partitions - 1) / max(f.partitions, 1)
	failing := false
	setFailing := func(v bool) {
		if v != failing {
			failing = v
			if v {
				f.failing.Add(1)
			} else {
				f.failing.Add(-1)
			}
		}
	}
	defer setFailing(false)
	delay := backoff(0) / 2
	// byPriority: read with ReadByPriority, as runs of a priority above
	// the default may wait; at first too, for a backlog queued while no
	// worker ran.
	byPriority := true
	for {
		// n slots are held for the read (one partition), or none.
		n, count := 0, 0
		if f.partitions <= 1 {
			if n = f.slots.take(quit); n == 0 {
				return
			}
			count = n
		} else {
			select {
			case <-quit:
				return
			default:
			}
			count = min(max(len(f.slots), 1), share)
		}
		tasks := f.pauses.active(f.tasks)
		if len(tasks) == 0 {
			// Every task of this worker is paused.
			f.slots.release(n)
			wait := f.block
			if f.pauses != nil {
				wait = f.pauses.every
			}
			if !sleep(quit, wait) {
				return
			}
			continue
		}
		// Bounded, so that a stopped Redis holds Shutdown up no longer than
		// this: go-redis itself allows a blocking read 10s past its block.
		rctx, rcancel := context.WithTimeout(ctx, f.block+f.opTimeout)
		var ds []engine.Delivery
		var err error
		if byPriority {
			var more bool
			ds, more, err = f.store.ReadByPriority(rctx, part, f.consumer, tasks, count, engine.PriorityBound)
			// With nothing left above the default, the next read blocks.
			byPriority = more || err != nil
		} else {
			ds, err = f.store.ReadGroup(rctx, part, f.consumer, tasks, count, f.block)
			// The highest priority comes first.
			byPriority = len(ds) > 0 && ds[0].Priority > engine.PriorityDefault
		}
		rcancel()
		if err != nil {
			f.slots.release(n)
			if ctx.Err() != nil {
				return
			}
			setFailing(true)
			if strings.Contains(err.Error(), "NOGROUP") {
				// (Contains: a read by priority, a script, reports it
				// after the script's own words on some servers.)
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
			f.log.Warn("taskq: reading task streams failed; retrying", "err", err, "partition", part, "in", delay)
			if !sleep(quit, delay) {
				return
			}
			delay = backoff(delay)
			continue
		}
		setFailing(false)
		delay = backoff(0) / 2
		if len(ds) > n {
			// XREADGROUP's COUNT applies to each stream, so one read of
			// several task streams can bring more deliveries than free
			// slots (and a partition's reader holds none). The surplus
			// waits here for slots: no more than Concurrency handlers run,
			// and the slot count stays whole.
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
// the others as slots free up, as many at once as are free. It reports
// false when quit fired first; the deliveries not dispatched stay pending
// and are reclaimed once their lease lapses.
func (f *fetcher) dispatchSurplus(quit <-chan struct{}, ds []engine.Delivery, n int) bool {
	if n > 0 {
		f.dispatch.dispatch(ds[:n])
	}
	for ds = ds[n:]; len(ds) > 0; ds = ds[n:] {
		if n = f.slots.takeUpTo(quit, len(ds)); n == 0 {
			return false
		}
		f.dispatch.dispatch(ds[:n])
	}
	return true
}
