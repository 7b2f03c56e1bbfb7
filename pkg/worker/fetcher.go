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
		ds, err := w.store.ReadGroup(ctx, w.opts.Name, w.names, n, w.opts.FetchBlock)
		if err != nil {
			w.releaseSlots(n)
			if ctx.Err() != nil {
				return
			}
			if strings.HasPrefix(err.Error(), "NOGROUP") {
				for _, t := range w.names {
					_ = w.store.EnsureGroup(ctx, t)
				}
			}
			w.log.Warn("taskq: reading task streams failed; retrying", "err", err, "in", delay)
			if !sleep(quit, delay) {
				return
			}
			delay = backoff(delay)
			continue
		}
		delay = backoff(0) / 2
		w.releaseSlots(n - len(ds))
		w.dispatch(ds)
	}
}

func (w *Worker) releaseSlots(n int) {
	for i := 0; i < n; i++ {
		w.slots <- struct{}{}
	}
}

// dispatch starts a handler for each delivery; each holds one slot.
func (w *Worker) dispatch(ds []redisstore.Delivery) {
	for _, d := range ds {
		w.runs.Add(1)
		go func(d redisstore.Delivery) {
			defer w.runs.Done()
			defer w.releaseSlots(1)
			w.process(d)
		}(d)
	}
}
