package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/runstats"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// processorStore is what the processor writes to Redis itself; outcomes
// and deferred starts go through its batchers.
type processorStore interface {
	runStore
	StartBatch(ctx context.Context, consumer string, now time.Time, ds []engine.Delivery) ([]engine.StartResult, []error)
	Requeue(ctx context.Context, runID, task string, attempt int) (engine.FinishResult, error)
	WakeRuns(ctx context.Context, runIDs []string) error
}

// processor runs the handlers of the deliveries the fetcher and the
// recoverer dispatch to it, and records their outcomes. Each delivery
// holds a handler slot from its dispatch until its handler returns, then
// a recording token until its outcome is recorded (see finish), or its
// slot until it turns out not to start; it counts in inFlight until then
// (see end). Stopping it
// cancels the handlers still running with ErrShutdown, lets them give their
// runs back, and waits until every attempt has ended.
type processor struct {
	startStop
	store  processorStore
	tasks  map[string]*registration
	active *activeRuns
	slots  slots
	// recording holds a token for each outcome being recorded, Concurrency
	// in all: a handler that returns gives its slot to the next delivery
	// while its outcome goes to Redis, so that a slot does not wait for a
	// round trip, and a worker whose outcomes cannot be written stops
	// taking runs once Concurrency of them wait.
	recording slots
	consumer  string
	ns        string
	lease     time.Duration
	// startDelay: see Options.StartDelay.
	startDelay  time.Duration
	opTimeout   time.Duration
	concurrency int
	clock       task.Clock
	log         *slog.Logger
	metrics     *workerMetrics
	// starts coalesces the begins of deferred attempts whose handlers ran
	// past StartDelay into one call of the start script; finishes the
	// outcomes handlers record at the same time into one call of the
	// finish script.
	starts   *engine.Batcher[engine.Delivery, engine.StartResult]
	finishes *engine.Batcher[*engine.FinishParams, engine.FinishResult]
	// wakes coalesces the wakes of the parents of child runs that end at
	// the same time (a workflow's nodes, many children of one run) into
	// one call (see wakeParents).
	wakes *engine.Batcher[string, struct{}]
	// limiter holds back the deliveries their task's rate limits refuse
	// (see ratelimit.go); nil admits everything.
	limiter *rateLimiter
	// spawner spawns the children of the runs' handlers (see Spawn); nil
	// where nothing may spawn.
	spawner *spawner
	// stats counts the run statistics: queue waits and run times (nil:
	// none).
	stats *runstats.Recorder
	// conc asks concurrency groups for slots before runs start, and gives
	// them back when they end (see concurrency.go); nil when no task has a
	// concurrency limit.
	conc *concurrencyGate
	// pauses holds back the deliveries of paused tasks (see pauses.go);
	// nil holds back none.
	pauses *pauses

	// base is the context of the starts sent before handlers run; Stop
	// cancels it.
	base     context.Context
	stopBase context.CancelCauseFunc
	inFlight sync.WaitGroup
	idleOnce sync.Once
	idleCh   chan struct{}
	// work hands started attempts to idle runners (see run); closed by
	// Stop once every attempt has ended.
	work     chan runJob
	runners  atomic.Int64
	stopOnce sync.Once

	// halt is the context of a shutdown (see halt), and halted is closed
	// when it ends: writes still failing then are given up, and their runs
	// listed in lost.
	halt     atomic.Pointer[context.Context]
	haltOnce sync.Once
	halted   chan struct{}
	lost     leftBehind
}

// setUp makes what the processor needs before Start; the wiring calls it
// once its fields are set.
func (p *processor) setUp() *processor {
	p.base, p.stopBase = context.WithCancelCause(context.Background())
	p.work = make(chan runJob)
	p.recording = newSlots(p.concurrency)
	p.halted = make(chan struct{})
	return p
}

// shutDown bounds every write the processor makes from now on by ctx, the
// context of a shutdown, whose end is the end of the shutdown.
func (p *processor) shutDown(ctx context.Context) {
	p.haltOnce.Do(func() {
		p.halt.Store(&ctx)
		go func() { <-ctx.Done(); close(p.halted) }()
	})
}

// Start makes the processor take deliveries; it is ready at once.
func (p *processor) Start(context.Context) error { return p.begin(nil) }

// drain waits until every dispatched attempt has ended, grace has passed
// or ctx ends, whichever comes first. Call it only once nothing dispatches
// any more (the fetcher and the recoverer are stopped).
func (p *processor) drain(ctx context.Context, grace time.Duration) {
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.idle():
	case <-timer.C:
	case <-ctx.Done():
	}
}

// idle is closed once every dispatched attempt has ended; like drain, it
// is asked for only once nothing dispatches any more.
func (p *processor) idle() <-chan struct{} {
	p.idleOnce.Do(func() {
		p.idleCh = make(chan struct{})
		go func() { p.inFlight.Wait(); close(p.idleCh) }()
	})
	return p.idleCh
}

// Stop cancels the handlers still running, and every one that starts from
// now on, with ErrShutdown: each gives its run back to the queue (see
// process). It returns once every attempt has ended and the runners are
// gone. Like drain, it is called once nothing dispatches any more.
func (p *processor) Stop() {
	p.startStop.Stop()
	p.stopOnce.Do(func() {
		p.stopBase(ErrShutdown)
		p.active.cancelAll(ErrShutdown)
		<-p.idle()
		close(p.work)
	})
}

// dispatch hands a batch of deliveries, one slot taken for each, to
// runners. A new delivery whose next attempt its entry tells (see
// engine.RunSpec.Attempts) runs at once: its attempt is begun in Redis
// only if the handler is still running after StartDelay, or else together
// with its outcome (see process). The others (reclaimed deliveries, which
// must count the delivery that was lost, and runs at their last allowed
// delivery, which start.lua may find exhausted) are begun first, all in
// one round trip (one call of the start script, see redisstore.StartBatch).
//
// dispatch waits for those starts, but not for deferred ones: the fetcher
// reads again as soon as a slot is free, and a read that blocks is woken by
// the next trigger call, so it takes what one trigger batch queued
// (docs/performance.md has the batch sizes measured).
func (p *processor) dispatch(ds []engine.Delivery) {
	// A paused task's deliveries read before the worker learned of the
	// pause go back first: they take no rate limit unit or group slot.
	ds = p.holdPaused(ds)
	// Rate limits first: a run they hold back never takes a concurrency
	// slot it would hold while it waits.
	ds = p.admitRateLimited(ds)
	if ds = p.conc.admit(ds); len(ds) == 0 {
		return
	}
	p.inFlight.Add(len(ds))
	begun := p.clock.Now()
	var first []engine.Delivery
	for _, d := range ds {
		if !p.canDefer(d) {
			first = append(first, d)
			continue
		}
		p.run(runJob{d: d, st: engine.StartResult{Started: true, Attempt: d.Spec.Attempts + 1, Spec: d.Spec},
			begun: begun, deferred: true})
	}
	if len(first) > 0 {
		p.startBatch(first)
	}
}

// holdPaused returns the deliveries of ds whose task is not paused, and
// holds back the others (pauses.holdBack), giving their slots back.
func (p *processor) holdPaused(ds []engine.Delivery) []engine.Delivery {
	ok, held := p.pauses.split(ds)
	if len(held) > 0 {
		p.inFlight.Add(1)
		go func() {
			defer p.inFlight.Done()
			p.pauses.holdBack(p.base, held)
			p.slots.release(len(held))
		}()
	}
	return ok
}

// canDefer reports whether d's handler may run before its attempt is
// begun in Redis.
func (p *processor) canDefer(d engine.Delivery) bool {
	sp := d.Spec
	return p.startDelay > 0 && sp != nil && !d.Redelivered &&
		(sp.MaxDeliveries <= 0 || sp.Attempts+1 <= sp.MaxDeliveries)
}

func (p *processor) startBatch(ds []engine.Delivery) {
	begun := p.clock.Now()
	res, errs := p.store.StartBatch(p.base, p.consumer, begun, ds)
	for i, d := range ds {
		switch {
		case errs[i] != nil:
			// The delivery stays pending and is reclaimed once its lease lapses.
			p.log.Warn("taskq: starting run failed", "run", d.RunID, "task", d.Task, "err", errs[i])
		case !res[i].Started:
			p.log.Debug("taskq: delivery skipped", "run", d.RunID, "reason", res[i].Reason)
			p.conc.release(d.RunID)
		default:
			p.run(runJob{d: d, st: res[i], begun: begun})
			continue
		}
		p.slots.release(1)
		p.inFlight.Done()
	}
}

// runJob is an attempt that has started and waits for a runner.
type runJob struct {
	d     engine.Delivery
	st    engine.StartResult
	begun time.Time
	// deferred: the attempt is not begun in Redis yet, and st is what the
	// delivery's spec says it will be (see dispatch).
	deferred bool
}

// run hands a started attempt to an idle runner, or starts a runner for
// it. Runners live until Stop: a long-lived goroutine has already grown
// the stack a handler needs, where a goroutine per run would grow (copy) it
// on every run. There are never more runners than handler slots: every
// attempt holds a slot, so when all Concurrency runners exist and none is
// idle, one has just returned from its handler and is about to take the
// next job.
func (p *processor) run(j runJob) {
	select {
	case p.work <- j:
		return
	default:
	}
	if p.runners.Add(1) <= int64(p.concurrency) {
		go p.runner(j)
		return
	}
	p.runners.Add(-1)
	p.work <- j
}

// runner runs j, then each job it is handed, until Stop closes p.work.
// It does not wait for an outcome to be recorded: the attempt keeps its
// slot until then (see end).
func (p *processor) runner(j runJob) {
	for {
		p.process(j)
		var ok bool
		if j, ok = <-p.work; !ok {
			return
		}
	}
}

// process runs the attempt j started: call the handler, record the outcome.
// Everything it writes is fenced by the attempt number. The run holds its
// slot, and counts in inFlight, until end.
func (p *processor) process(j runJob) {
	d, st := j.d, j.st
	reg := p.tasks[d.Task]
	// The run's context does not derive from p.base: Stop cancels the
	// active runs one by one (see activeRuns.cancelAll), which spares every
	// run registering with, and removing itself from, a shared parent.
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &attempt{d: d}
	a.lease = engine.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt, Priority: d.Priority}
	a.task, a.cancel, a.leaseUntil, a.startedAt = d.Task, cancel, j.begun.Add(p.lease), j.begun
	runCtx := ctx
	if timeout := reg.def.Timeout; timeout > 0 {
		runCtx, a.stop = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	}
	a.rc = runContext{
		Context: runCtx, store: p.store, base: p.log, runID: d.RunID, task: d.Task, key: st.Spec.Key, ns: p.ns,
		attempt: st.Attempt, meta: st.Spec.Meta, spawner: p.spawner, workerClock: p.clock,
	}
	if j.deferred {
		a.answered.Add(1)
		a.beginAt = time.AfterFunc(p.startDelay, func() { p.beginDeferred(a) })
	} else {
		a.begun.Store(true)
		p.countWait(d, j.begun)
	}
	if p.active.add(&a.activeRun) {
		cancel(ErrShutdown)
	}

	p.metrics.runStarted(d.Task)
	began := time.Now()
	out, herr := call(reg.handler, &a.rc, st.Spec.Input)
	returned := func(outcome string) { p.metrics.handlerReturned(d.Task, outcome, time.Since(began).Seconds()) }

	// A deferred attempt is begun with its outcome if the timer has not
	// fired yet; otherwise the outcome waits for the start's answer.
	withOutcome := false
	if j.deferred {
		if a.phase.CompareAndSwap(phaseWaiting, phaseEnding) {
			a.beginAt.Stop()
			withOutcome = true
		} else {
			a.answered.Wait()
			if a.phase.Load() == phaseRefused {
				returned("abandoned")
				a.rc.Logger().Info("taskq: attempt abandoned", "cause", context.Cause(runCtx))
				p.end(a)
				return
			}
			p.countWait(d, j.begun)
		}
	}

	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, task.ErrRunCancelled), errors.Is(cause, ErrLeaseLost):
		// Cancelled: the cancel already ended the run. Lease lost: the
		// run belongs to a newer attempt; writing would be refused anyway.
		returned("abandoned")
		a.rc.Logger().Info("taskq: attempt abandoned", "cause", cause)
		p.end(a)
		return
	case errors.Is(cause, ErrShutdown):
		returned("abandoned")
		if withOutcome {
			if err := p.beginNow(a); err != nil {
				// Its delivery stays pending, under this worker's lease.
				p.lost.add(d.RunID, d.Task, fmt.Errorf("give back: %w", err))
				a.rc.Logger().Warn("taskq: could not give the run back on shutdown; it will be delivered again when its lease ends",
					"err", err)
				p.end(a)
				return
			}
			if a.phase.Load() != phaseBegun {
				p.end(a)
				return
			}
			p.countWait(d, j.begun)
		}
		rctx, rcancel := p.opCtx()
		res, err := p.store.Requeue(rctx, d.RunID, d.Task, st.Attempt)
		rcancel()
		if err != nil {
			p.lost.add(d.RunID, d.Task, fmt.Errorf("give back: %w", err))
			a.rc.Logger().Warn("taskq: could not give the run back on shutdown; it will be delivered again when its lease ends",
				"err", err)
		} else {
			a.rc.Logger().Info("taskq: run given back on shutdown", "requeued", res.Written)
		}
		p.end(a)
		return
	}
	if herr == nil && cause != nil && errors.Is(cause, ErrTimeout) {
		herr = fmt.Errorf("%w after %s", ErrTimeout, reg.def.Timeout)
	}
	f := &a.finish
	*f = engine.FinishParams{
		RunID: d.RunID, Attempt: st.Attempt, Outcome: engine.OutcomeSucceeded, Payload: out,
		Task: d.Task, EntryID: d.EntryID, Spec: st.Spec, Priority: d.Priority,
	}
	if withOutcome {
		f.Began, f.Consumer = j.begun, p.consumer
	}
	if herr != nil && cause == nil {
		// (Only then: susp escapes to the heap, which a run that
		// succeeded need not pay for.)
		var susp *suspension
		if errors.As(herr, &susp) {
			// The handler waits durably: the run gives its slot back and
			// waits, and is queued again when the wait is over.
			f.Outcome, f.RetryAt, f.Payload = engine.OutcomeWait, susp.until, []byte(susp.reason)
			a.rc.Logger().Debug("taskq: run waits", "for", susp.reason)
			herr = nil
		}
	}
	if herr != nil {
		if errors.Is(cause, ErrTimeout) && !errors.Is(herr, ErrTimeout) {
			herr = fmt.Errorf("%w after %s: %w", ErrTimeout, reg.def.Timeout, herr)
		}
		f.Payload = []byte(herr.Error())
		fails := st.Spec.Fails + 1
		var nr *nonRetryableError
		var nd *NondeterminismError
		if fails <= st.Spec.Retries && !errors.As(herr, &nr) && !errors.As(herr, &nd) {
			f.Outcome = engine.OutcomeRetry
			f.RetryAt = p.clock.Now().Add(taskdef.Delay(reg.def.Backoff, fails))
		} else {
			f.Outcome = engine.OutcomeFailed
		}
		if f.Outcome == engine.OutcomeFailed {
			// The run ends failed: operators look for this one.
			a.rc.Logger().Warn("taskq: run failed", "err", herr)
		} else {
			a.rc.Logger().Info("taskq: attempt failed; retrying", "err", herr, "retry_at", f.RetryAt)
		}
	}
	returned(string(f.Outcome))
	p.finish(a)
}

// call runs the handler, turning a panic into an error.
func call(h handlerFunc, ctx Context, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			if s, ok := r.(*suspension); ok {
				out, err = nil, s // a durable wait (see durable.go)
				return
			}
			err = fmt.Errorf("worker: handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return h(ctx, input)
}

// beginDeferred begins a deferred attempt whose handler has run for
// StartDelay, unless the handler returned first. The start goes out with
// the others due at the same time (p.starts). An attempt start.lua does
// not begin as this delivery's next one has its context cancelled: the
// run was cancelled, or it belongs to another delivery now.
func (p *processor) beginDeferred(a *attempt) {
	if !a.phase.CompareAndSwap(phaseWaiting, phaseBeginning) {
		return
	}
	p.starts.Go(context.Background(), a.d, func(st engine.StartResult, err error) { a.answer(st, err) })
}

// beginNow begins a deferred attempt whose handler has returned without
// an outcome to record (the worker is shutting down), so that the run can
// be given back at once. The error is the start's, when Redis did not
// answer it; the attempt was begun if a.phase is phaseBegun then.
func (p *processor) beginNow(a *attempt) error {
	ctx, cancel := p.opCtx()
	defer cancel()
	st, err := p.starts.Do(ctx, a.d)
	a.answer(st, err)
	return err
}

// end releases what an attempt held once it is over: its entry in the
// active runs (heartbeats renew its lease until then), its context, its
// concurrency group's slot, and its handler slot or recording token.
func (p *processor) end(a *attempt) {
	p.active.remove(&a.activeRun)
	if a.stop != nil {
		a.stop()
	}
	a.cancel(nil)
	p.conc.release(a.d.RunID)
	if a.recording {
		p.recording.release(1)
	} else {
		p.slots.release(1)
	}
	p.inFlight.Done()
}

// finish records the attempt's outcome and then ends it. Nothing is
// acknowledged as done before Redis holds the outcome: the attempt stays
// active, its lease renewed, and its concurrency group's slot held
// meanwhile. Its handler slot goes to the next delivery at once, traded
// for a recording token (see processor.recording). Outcomes recorded at
// the same time by several handlers go to Redis in one call of the finish
// script (p.finishes), each still fenced on its own; the runner does not
// wait for it but takes its next job.
func (p *processor) finish(a *attempt) {
	<-p.recording
	a.recording = true
	p.slots.release(1)
	a.finish.Now = p.clock.Now()
	// The batch is bounded by LeaseDuration (see the wiring in lifecycle.go).
	p.finishes.Go(context.Background(), &a.finish, func(res engine.FinishResult, err error) {
		if err != nil {
			// Retrying waits: not on the goroutine that sent the batch.
			go p.finishRetrying(a, err)
			return
		}
		p.recorded(a, res)
	})
}

// finishRetrying retries recording an outcome after err, while Redis is
// unreachable and the lease may still be ours. If the lease lapses first,
// the run is redelivered instead.
func (p *processor) finishRetrying(a *attempt, err error) {
	log := a.rc.Logger()
	delay := time.Duration(0)
	for {
		if a.expired(p.clock.Now()) {
			log.Warn("taskq: could not record outcome before the lease lapsed; the run will be redelivered", "err", err)
			p.end(a)
			return
		}
		delay = backoff(delay)
		log.Warn("taskq: recording outcome failed; retrying", "err", err, "in", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-p.halted:
			// The shutdown is over: the run is left to its lease.
			t.Stop()
			p.lost.add(a.d.RunID, a.task, fmt.Errorf("record outcome %s: %w", a.finish.Outcome, err))
			log.Warn("taskq: could not record outcome before the shutdown ended; the run will be delivered again when its lease ends",
				"err", err)
			p.end(a)
			return
		}
		a.finish.Now = p.clock.Now()
		var res engine.FinishResult
		if res, err = p.finishes.Do(p.shutdownCtx(), &a.finish); err == nil {
			p.recorded(a, res)
			return
		}
	}
}

// recorded ends an attempt whose outcome Redis answered for.
func (p *processor) recorded(a *attempt, res engine.FinishResult) {
	if !res.Written {
		a.rc.Logger().Info("taskq: outcome not recorded", "reason", res.Status)
	} else {
		p.metrics.recorded(a.task, a.finish.Outcome)
		if !a.finish.Began.IsZero() {
			// Begun with its outcome: its wait is counted now.
			p.countWait(a.d, a.startedAt)
		}
		p.stats.Ran(a.finish.Now, a.task, a.finish.Outcome, a.finish.Now.Sub(a.startedAt))
		if parent := engine.ParentOf(a.rc.key); parent != "" && engine.IsTerminal(res.Status) {
			p.wakes.Go(context.Background(), parent, func(_ struct{}, err error) {
				if err != nil {
					p.log.Debug("taskq: waking the parent of a run that ended failed; it looks again by itself",
						"parent", parent, "err", err)
				}
			})
		}
	}
	p.end(a)
}

// wakeParents wakes the parents of child runs that ended, should they
// wait for their children (a workflow, see HandleWorkflow), each once
// however many of its children ended: one call for them all, whose error
// is every parent's. A wake that fails is only logged: a waiting workflow
// looks again by itself (workflowRecheck).
func wakeParents(st processorStore) func(ctx context.Context, parents []string) ([]struct{}, []error) {
	return func(ctx context.Context, parents []string) ([]struct{}, []error) {
		ids := make([]string, 0, len(parents))
		seen := make(map[string]bool, len(parents))
		for _, id := range parents {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		err := st.WakeRuns(ctx, ids)
		errs := make([]error, len(parents))
		for i := range errs {
			errs[i] = err
		}
		return make([]struct{}, len(parents)), errs
	}
}

// countWait counts in the run statistics the queue wait of d's attempt,
// begun at begun: from the time its stream entry was added (the entry ID's
// milliseconds) until then.
func (p *processor) countWait(d engine.Delivery, begun time.Time) {
	ms, _, _ := strings.Cut(d.EntryID, "-")
	added, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		return
	}
	p.stats.Wait(begun, d.Task, begun.Sub(time.UnixMilli(added)))
}
