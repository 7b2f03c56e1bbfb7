package worker

import (
	"context"
	"strings"

	"github.com/taskq/taskq/internal/redisstore"
)

// fetch reads new deliveries of every registered task with one blocking
// XREADGROUP, taking as many as there are free handler slots. Lapsed
// deliveries reclaimed by the recoverer go first.
func (w *Worker) fetch(quit <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-quit; cancel() }()
	var delay = backoff(0) / 2
	rec := &recoverer{w: w}
	for {
		// Wait for one free slot, then take every other free one.
		select {
		case <-quit:
			return
		case <-w.slots:
		}
		n := 1
	more:
		for n < w.opts.Concurrency {
			select {
			case <-w.slots:
				n++
			default:
				break more
			}
		}
		ds := rec.reclaim(ctx, n)
		if len(ds) > 0 {
			w.releaseSlots(n - len(ds))
			w.dispatch(ds)
			continue
		}
		// Bounded, so that a stopped Redis holds Shutdown up no longer than
		// this: go-redis itself allows a blocking read 10s past its block.
		rctx, rcancel := context.WithTimeout(ctx, w.opts.FetchBlock+w.opts.OperationTimeout)
		ds, err := w.store.ReadGroup(rctx, w.opts.Name, w.names, n, w.opts.FetchBlock)
		rcancel()
		if err != nil {
			w.releaseSlots(n)
			if ctx.Err() != nil {
				return
			}
			if strings.HasPrefix(err.Error(), "NOGROUP") {
				// Redis lost its data (a restart without persistence, a
				// flush): put back the groups and the registrations.
				rctx, rcancel := context.WithTimeout(ctx, w.opts.OperationTimeout)
				rerr := w.restore(rctx)
				rcancel()
				if rerr == nil {
					w.log.Warn("taskq: consumer groups were missing (did Redis lose its data?); created them again")
					delay = backoff(0) / 2
					if !sleep(quit, delay) {
						return
					}
					continue
				}
				w.log.Warn("taskq: restoring consumer groups and registrations failed", "err", rerr)
			}
			w.log.Warn("taskq: reading task streams failed; retrying", "err", err, "in", delay)
			if !sleep(quit, delay) {
				return
			}
			delay = backoff(delay)
			continue
		}
		delay = backoff(0) / 2
		if len(ds) > n {
			// XREADGROUP's COUNT applies to each stream, so one read of
			// several task streams can bring more deliveries than free
			// slots. The surplus waits here for slots: no more than
			// Concurrency handlers run, and the slot count stays whole.
			if !w.dispatchSurplus(quit, ds, n) {
				return
			}
			continue
		}
		w.releaseSlots(n - len(ds))
		w.dispatch(ds)
	}
}

// dispatchSurplus dispatches the first n deliveries on the slots taken and
// each further one as a slot frees up. It reports false when quit fired
// first; the deliveries not dispatched stay pending and are reclaimed once
// their lease lapses.
func (w *Worker) dispatchSurplus(quit <-chan struct{}, ds []redisstore.Delivery, n int) bool {
	w.dispatch(ds[:n])
	for _, d := range ds[n:] {
		select {
		case <-quit:
			return false
		case <-w.slots:
		}
		w.dispatch([]redisstore.Delivery{d})
	}
	return true
}

func (w *Worker) releaseSlots(n int) {
	for i := 0; i < n; i++ {
		w.slots <- struct{}{}
	}
}

// dispatch hands a batch of deliveries to runners. A new delivery whose
// next attempt its entry tells (see redisstore.RunSpec.Attempts) runs at
// once: its attempt is begun in Redis only if the handler is still running
// after StartDelay, or else together with its outcome (see process). The
// others (reclaimed deliveries, which must count the delivery that was
// lost, and runs at their last allowed delivery, which start.lua may find
// exhausted) are begun first, all in one round trip (one call of the start
// script, see redisstore.StartBatch). Each delivery holds one slot, and
// counts in w.runs, until its outcome is recorded or it turns out not to
// start.
//
// The fetch loop waits for those starts before it reads again, but not for
// deferred ones: it reads again as soon as a slot is free, and a read that
// blocks is woken by the next trigger call, so it takes what one trigger
// batch queued (about 15 runs per read in the e2e benchmark, against 35
// when draining a backlog).
func (w *Worker) dispatch(ds []redisstore.Delivery) {
	if len(ds) == 0 {
		return
	}
	w.runs.Add(len(ds))
	begun := w.opts.Clock.Now()
	var first []redisstore.Delivery
	for _, d := range ds {
		if !w.canDefer(d) {
			first = append(first, d)
			continue
		}
		w.run(runJob{d: d, st: redisstore.StartResult{Started: true, Attempt: d.Spec.Attempts + 1, Spec: d.Spec},
			begun: begun, deferred: true})
	}
	if len(first) > 0 {
		w.startBatch(first)
	}
}

// canDefer reports whether d's handler may run before its attempt is
// begun in Redis.
func (w *Worker) canDefer(d redisstore.Delivery) bool {
	sp := d.Spec
	return w.opts.StartDelay > 0 && sp != nil && !d.Redelivered &&
		(sp.MaxDeliveries <= 0 || sp.Attempts+1 <= sp.MaxDeliveries)
}

func (w *Worker) startBatch(ds []redisstore.Delivery) {
	begun := w.opts.Clock.Now()
	res, errs := w.store.StartBatch(w.baseCtx, w.opts.Name, begun, ds)
	for i, d := range ds {
		switch {
		case errs[i] != nil:
			// The delivery stays pending and is reclaimed once its lease lapses.
			w.log.Warn("taskq: starting run failed", "run", d.RunID, "task", d.Task, "err", errs[i])
		case !res[i].Started:
			w.log.Debug("taskq: delivery skipped", "run", d.RunID, "reason", res[i].Reason)
		default:
			w.run(runJob{d: d, st: res[i], begun: begun})
			continue
		}
		w.releaseSlots(1)
		w.runs.Done()
	}
}
