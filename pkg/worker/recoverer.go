package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// claimer is what the recoverer claims from Redis.
type claimer interface {
	AutoClaim(ctx context.Context, part int, task, consumer string, minIdle time.Duration, count int) ([]engine.Delivery, error)
}

// recoverer takes over deliveries whose lease lapsed: their worker died or
// stalled past the lease duration without a heartbeat. Every lease/2 it
// takes free handler slots, as the fetcher does, claims up to as many
// lapsed deliveries and dispatches them to the processor; it claims again
// at once while it fills every slot it took, so a backlog of lapsed runs
// (a worker died with many) is taken over as fast as slots free up. It
// looks at every task's stream in every partition, one XAUTOCLAIM each.
type recoverer struct {
	startStop
	store      claimer
	slots      slots
	dispatch   dispatcher
	consumer   string
	tasks      []string
	partitions int
	lease      time.Duration
	opTimeout  time.Duration
	log        *slog.Logger
	metrics    *workerMetrics
	// pauses says which tasks are paused: their lapsed deliveries stay
	// pending until the task is resumed.
	pauses *pauses

	next int // stream to start with, so every stream gets its turn
}

// Start starts recovering. It takes the slots free at that moment before
// it returns, and its first claim is made on them: a fetcher started after
// it reads nothing before that claim, so on a worker started after a crash
// the runs whose lease lapsed are taken over first.
func (r *recoverer) Start(context.Context) error {
	if err := r.canStart(); err != nil {
		return err
	}
	held := r.slots.takeFree()
	err := r.begin(func(quit <-chan struct{}) { r.loop(quit, held) })
	if err != nil {
		r.slots.release(held)
	}
	return err
}

// loop claims every lease/2, the first time at once on the held slots.
func (r *recoverer) loop(quit <-chan struct{}, held int) {
	defer func() { r.slots.release(held) }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-quit; cancel() }()
	for wait := time.Duration(0); sleep(quit, wait); wait = r.lease / 2 {
		for {
			n := held
			if held = 0; n == 0 {
				n = r.slots.take(quit)
			}
			if n == 0 {
				return
			}
			ds := r.reclaim(ctx, n)
			r.slots.release(n - len(ds))
			r.dispatch.dispatch(ds)
			if len(ds) < n {
				break
			}
		}
	}
}

// reclaim claims up to n lapsed deliveries.
func (r *recoverer) reclaim(ctx context.Context, n int) []engine.Delivery {
	var out []engine.Delivery
	parts := max(r.partitions, 1)
	streams := len(r.tasks) * parts
	for i := 0; i < streams && len(out) < n; i++ {
		k := (r.next + i) % streams
		t, part := r.tasks[k/parts], k%parts
		if r.pauses.paused(t) {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, r.opTimeout)
		ds, err := r.store.AutoClaim(cctx, part, t, r.consumer, r.lease, n-len(out))
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				r.log.Warn("taskq: reclaiming lapsed runs failed", "task", t, "partition", part, "err", err)
			}
			continue
		}
		if len(ds) > 0 {
			r.log.Info("taskq: reclaimed runs whose lease lapsed", "task", t, "count", len(ds))
			r.metrics.redelivered(t, len(ds))
		}
		out = append(out, ds...)
	}
	r.next++
	return out
}
