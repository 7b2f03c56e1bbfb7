package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/runstats"
	"github.com/taskq/taskq/pkg/task"
)

// lifecycle holds the components of a started Worker, and is the one place
// that says in which order they start and stop, and why.
type lifecycle struct {
	registrar   *registrar
	pauses      *pauses
	presence    *presence
	canceller   *canceller
	processor   *processor
	heartbeater *heartbeater
	forwarder   *forwarder
	janitor     *janitor
	scheduler   component // *scheduler, or a component doing nothing under NoScheduler
	recoverer   *recoverer
	fetcher     *fetcher
	stats       *statsRecorder
	// spawner is not a component: it has nothing to start, and its
	// client is closed once the last handler has returned.
	spawner *spawner
}

// wire builds the components of w, with the tasks registered on it (which
// no longer change once it starts), each given what it needs explicitly.
func wire(w *Worker, parts int, cancels []string) (*lifecycle, error) {
	o, st := w.opts, w.store
	defs := make([]*task.Definition, len(w.names))
	for i, n := range w.names {
		defs[i] = w.tasks[n].def
	}
	names := append([]string(nil), w.names...)
	active := newActiveRuns()
	free := newSlots(o.Concurrency)
	paused := &pauses{store: st, tasks: names, every: o.PauseRefresh, opTimeout: o.OperationTimeout, clock: o.Clock,
		log: w.log, metrics: w.metrics}
	stats := &statsRecorder{rec: runstats.New(st, w.log), interval: o.StatsInterval, opTimeout: o.OperationTimeout}

	p := &processor{
		store: st, tasks: w.tasks, active: active, slots: free,
		consumer: o.Name, ns: o.Namespace, lease: o.LeaseDuration, startDelay: o.StartDelay,
		opTimeout: o.OperationTimeout, concurrency: o.Concurrency, clock: o.Clock, log: w.log, metrics: w.metrics,
		pauses: paused,
		stats:  stats.rec,
		spawner: &spawner{redis: w.conn.Redis, namespace: o.Namespace, partitions: parts, opTimeout: o.OperationTimeout,
			clock: o.Clock, log: w.log},
	}
	p.limiter = &rateLimiter{store: st, tasks: w.tasks, opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log, metrics: w.metrics}
	// One call of each script in flight, and each batch bounded by
	// LeaseDuration: the handlers of a fetched batch end at about the same
	// time, and with a second sender their outcomes would go out in three
	// round trips (the first, the second, the rest) rather than two.
	var err error
	p.finishes, err = engine.NewBatcher(engine.BatcherOptions{Timeout: o.LeaseDuration, Senders: 1}, st.FinishBatch)
	if err == nil {
		p.starts, err = engine.NewBatcher(engine.BatcherOptions{Timeout: o.LeaseDuration, Senders: 1},
			func(ctx context.Context, ds []engine.Delivery) ([]engine.StartResult, []error) {
				return st.StartBatch(ctx, o.Name, o.Clock.Now(), ds)
			})
	}
	if err == nil {
		p.wakes, err = engine.NewBatcher(engine.BatcherOptions{Timeout: o.OperationTimeout, Senders: 1}, wakeParents(st))
	}
	if err == nil {
		p.conc, err = newConcurrencyGate(&concurrencyGate{
			store: st, tasks: w.tasks, slots: free, consumer: o.Name, lease: o.LeaseDuration,
			opTimeout: o.OperationTimeout, partitions: parts, clock: o.Clock, log: w.log,
		})
	}
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	reg := &registrar{
		store: st, defs: defs, consumer: o.Name, conflict: conflictOf(o.RefuseDefinitionConflict),
		interval: o.HeartbeatInterval, opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log,
	}
	host, _ := os.Hostname()
	var sched component = &idle{}
	if !o.NoScheduler {
		sched = &scheduler{
			redis: w.conn.Redis, namespace: o.Namespace, partitions: parts, register: o.Schedules,
			refresh: o.ScheduleRefresh, opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log,
		}
	}
	return &lifecycle{
		spawner:   p.spawner,
		stats:     stats,
		scheduler: sched,
		registrar: reg,
		pauses:    paused,
		presence: &presence{
			store: st, keep: engine.WorkerKeepDefault, opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log,
			record: engine.WorkerRecord{
				Name: o.Name, Host: host, PID: os.Getpid(), Version: o.Version, Tasks: names,
				Concurrency: o.Concurrency, Started: o.Clock.Now(),
				HeartbeatInterval: o.HeartbeatInterval, LeaseDuration: o.LeaseDuration,
			},
		},
		canceller: &canceller{
			sub: st, channels: cancels, active: active,
			opTimeout: o.OperationTimeout, log: w.log,
		},
		processor: p.setUp(),
		heartbeater: &heartbeater{
			store: st, active: active, consumer: o.Name, lease: o.LeaseDuration,
			interval: o.HeartbeatInterval, clock: o.Clock, log: w.log, metrics: w.metrics, conc: p.conc,
		},
		forwarder: &forwarder{store: st, partitions: parts, opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log},
		janitor: &janitor{store: st, fanouts: st, cascades: st, eventWaits: st, partitions: parts, every: o.SweepInterval,
			opTimeout: o.OperationTimeout, clock: o.Clock, log: w.log},
		recoverer: &recoverer{
			store: st, slots: free, dispatch: p, consumer: o.Name, tasks: names, partitions: parts,
			lease: o.LeaseDuration, opTimeout: o.OperationTimeout, log: w.log, metrics: w.metrics, pauses: paused,
		},
		fetcher: &fetcher{
			store: st, restorer: reg, slots: free, dispatch: p, consumer: o.Name, tasks: names, partitions: parts,
			block: o.FetchBlock, opTimeout: o.OperationTimeout, log: w.log, pauses: paused,
		},
	}, nil
}

// startOrder is the order components start in; each is ready before the
// next starts, so Start returns only once every one is.
//
//  1. registrar: the consumer groups must exist before anything reads the
//     streams, and the definitions be registered before the worker counts
//     as started (triggers by task name need them); a definition conflict
//     under definitionRefuse fails Start here, before anything runs.
//  2. pauses: the paused tasks are read before anything delivers work,
//     so that a worker started while a task is paused starts none of its
//     runs.
//  3. presence: the worker is listed (taskq workers ls) before it can
//     hold a run, so that no run is held by a worker nobody can see.
//  4. canceller: subscribed, and the subscription confirmed by Redis,
//     before any handler runs, so that no cancel made once Start returns
//     is missed.
//  5. stats, processor: the run statistics' flushes run before any
//     attempt is counted; the processor takes deliveries before anything
//     dispatches them.
//  6. heartbeater: renews leases before the first attempt begins.
//  7. forwarder, janitor, scheduler: they need nothing from the others
//     and nothing needs them; they only have to run by the time Start
//     returns. The scheduler comes after the registrar, so that a tick of
//     one of this worker's tasks finds the task registered.
//  8. recoverer, then fetcher: they deliver work, so they come last. The
//     recoverer goes first and takes the free slots as it starts, so that
//     on a worker started after a crash the runs whose lease lapsed are
//     taken over before new ones are read.
func (l *lifecycle) startOrder() []component {
	return []component{l.registrar, l.pauses, l.presence, l.canceller, l.stats, l.processor, l.heartbeater, l.forwarder, l.janitor, l.scheduler, l.recoverer, l.fetcher}
}

// start starts every component in startOrder; if one fails, it stops those
// started and returns the error.
func (l *lifecycle) start(ctx context.Context) error {
	for _, c := range l.startOrder() {
		if err := c.Start(ctx); err != nil {
			l.stop(context.Background(), 0)
			if errors.Is(err, errStopped) {
				return errors.New("worker: shut down before it started")
			}
			return err
		}
	}
	return nil
}

// stop stops the components in three stages, each waited for before the
// next (the components of one stage stop together):
//
//  1. fetcher and recoverer: nothing new is taken. Whatever they had read
//     is dispatched or stays pending, to be reclaimed once its lease lapses.
//  2. processor: handlers get grace (ShutdownTimeout, or until ctx ends)
//     to finish; then those still running are cancelled with ErrShutdown
//     and give their runs back, and the processor waits until every
//     attempt has ended and its outcome is recorded. The heartbeater and
//     the canceller run on meanwhile: a lease must be renewed, and a
//     cancel must reach its handler, until the last handler has returned.
//  3. heartbeater, canceller, forwarder, janitor, scheduler, registrar, pauses, presence, stats:
//     nothing needs them any more. The presence goes with them, after the
//     processor, so the worker stays listed while it holds a run; its
//     record is removed then (a worker that dies keeps it, listed as dead).
//     The run statistics go with them: every attempt has been counted by
//     then, and the last flush is bounded by OperationTimeout.
//
// Every Stop is safe before Start and twice, so stop also undoes a Start
// that failed half-way, and runs again on a second Shutdown.
//
// ctx's end is the end of the shutdown: the processor's hand-backs and
// last outcomes are bounded by it (see processor.shutDown).
func (l *lifecycle) stop(ctx context.Context, grace time.Duration) {
	l.processor.shutDown(ctx)
	handlersEnd := time.Now().Add(grace) // the grace counts from now
	stopTogether(l.fetcher, l.recoverer)
	l.processor.drain(ctx, time.Until(handlersEnd))
	l.processor.Stop()
	if l.spawner != nil {
		l.spawner.close()
	}
	stopTogether(l.heartbeater, l.canceller, l.forwarder, l.janitor, l.scheduler, l.registrar, l.pauses, l.presence, l.stats)
}

// stopTogether stops cs at the same time and returns once all have
// stopped: a component waiting on a call to Redis holds up no other.
func stopTogether(cs ...component) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() { defer wg.Done(); c.Stop() }()
	}
	wg.Wait()
}

// idle is a component with no duty, in the place of one turned off.
type idle struct{ startStop }

// Start marks it started.
func (i *idle) Start(context.Context) error { return i.begin(nil) }
