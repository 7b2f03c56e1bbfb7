package worker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// PauseRefreshDefault is how often a worker reads which tasks are paused
// (Options.PauseRefresh): a pause or a resume takes effect on every worker
// within about this long.
const PauseRefreshDefault = time.Second

// pauseStore is what the pauses component reads and writes in Redis.
type pauseStore interface {
	PausedTasks(ctx context.Context) (map[string]time.Time, error)
	DeferRuns(ctx context.Context, ds []engine.Deferral) ([]engine.DeferResult, []error)
}

// pauseReason is a held-back run's Waiting while its task is paused.
const pauseReason = "task paused"

// pauses knows which tasks are paused (client.Inspector.SetTaskPaused): it
// reads the namespace's paused set when it starts and every PauseRefresh
// after, one HGETALL of the home partition. The fetcher reads no stream of
// a paused task and the recoverer claims none, so their deliveries stay in
// the stream, or pending, until the task is resumed. A delivery read
// before the worker learned of a pause (a read of the streams blocks for
// up to FetchBlock) is held back at dispatch, as a rate limit holds one
// back: its run stays queued, waiting in the retry zset for PauseRefresh,
// then goes back to its stream (see holdBack). A read that fails keeps the
// last set read.
type pauses struct {
	startStop
	store     pauseStore
	tasks     []string // the worker's, for the gauge
	every     time.Duration
	opTimeout time.Duration
	clock     task.Clock
	log       *slog.Logger
	metrics   *workerMetrics

	set atomic.Pointer[map[string]time.Time]
}

// Start reads the paused set once, so that a worker started while a task
// is paused starts none of its runs, then refreshes it every PauseRefresh.
// A nil *pauses (a lifecycle built without one in tests) does nothing.
func (p *pauses) Start(ctx context.Context) error {
	if p == nil {
		return nil
	}
	if err := p.canStart(); err != nil {
		return err
	}
	if err := p.refresh(ctx); err != nil {
		return err
	}
	return p.begin(p.loop)
}

// Stop ends the refreshes.
func (p *pauses) Stop() {
	if p != nil {
		p.startStop.Stop()
	}
}

func (p *pauses) loop(quit <-chan struct{}) {
	for sleep(quit, p.every) {
		ctx, cancel := context.WithTimeout(context.Background(), p.opTimeout)
		if err := p.refresh(ctx); err != nil {
			p.log.Warn("taskq: reading the paused tasks failed; keeping the last read", "err", err)
		}
		cancel()
	}
}

func (p *pauses) refresh(ctx context.Context) error {
	m, err := p.store.PausedTasks(ctx)
	if err != nil {
		return err
	}
	if old := p.set.Load(); old != nil {
		for name := range m {
			if _, ok := (*old)[name]; !ok && p.mine(name) {
				p.log.Info("taskq: task paused; starting none of its runs", "task", name)
			}
		}
		for name := range *old {
			if _, ok := m[name]; !ok && p.mine(name) {
				p.log.Info("taskq: task resumed", "task", name)
			}
		}
	}
	p.set.Store(&m)
	p.metrics.pausedTasks(p.tasks, m)
	return nil
}

func (p *pauses) mine(name string) bool {
	for _, t := range p.tasks {
		if t == name {
			return true
		}
	}
	return false
}

// paused reports whether the task is paused, as last read. A nil *pauses
// (components built without one in tests) pauses nothing.
func (p *pauses) paused(name string) bool {
	if p == nil {
		return false
	}
	m := p.set.Load()
	if m == nil {
		return false
	}
	_, ok := (*m)[name]
	return ok
}

// active returns those of tasks that are not paused (tasks itself when
// none is).
func (p *pauses) active(tasks []string) []string {
	if p == nil {
		return tasks
	}
	m := p.set.Load()
	if m == nil || len(*m) == 0 {
		return tasks
	}
	out := make([]string, 0, len(tasks))
	for _, t := range tasks {
		if _, ok := (*m)[t]; !ok {
			out = append(out, t)
		}
	}
	return out
}

// split returns the deliveries of ds whose task is not paused, and the
// others.
func (p *pauses) split(ds []engine.Delivery) (ok, held []engine.Delivery) {
	if p == nil {
		return ds, nil
	}
	if m := p.set.Load(); m == nil || len(*m) == 0 {
		return ds, nil
	}
	for _, d := range ds {
		if p.paused(d.Task) {
			held = append(held, d)
		} else {
			ok = append(ok, d)
		}
	}
	return ok, held
}

// holdBack gives the runs of deliveries of paused tasks back, still
// queued and with no attempt begun: each waits in its partition's retry
// zset for PauseRefresh (Waiting "task paused"), then the forwarder
// queues it again in its stream, which no worker reads while the task is
// paused. A run that cannot be held back stays pending and is reclaimed
// once its lease lapses, after the task is resumed.
func (p *pauses) holdBack(ctx context.Context, ds []engine.Delivery) {
	ctx, cancel := context.WithTimeout(ctx, p.opTimeout)
	defer cancel()
	due := p.clock.Now().Add(p.every).Truncate(time.Millisecond)
	defs := make([]engine.Deferral, len(ds))
	for i, d := range ds {
		defs[i] = engine.Deferral{Delivery: d, Due: due, Reason: pauseReason}
	}
	res, errs := p.store.DeferRuns(ctx, defs)
	for i, d := range ds {
		switch {
		case errs[i] != nil:
			p.log.Warn("taskq: holding back a run of a paused task failed", "run", d.RunID, "task", d.Task, "err", errs[i])
		case !res[i].Held:
			p.log.Debug("taskq: delivery skipped", "run", d.RunID, "reason", res[i].Reason)
		default:
			p.log.Debug("taskq: run of a paused task held back", "run", d.RunID, "task", d.Task)
		}
	}
}
