package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// activeRun is an attempt this worker is running.
type activeRun struct {
	lease  redisstore.Lease
	task   string
	cancel context.CancelCauseFunc
	// begun is set once Redis holds the attempt as begun: heartbeats renew
	// only the leases of begun attempts (see process).
	begun atomic.Bool

	mu         sync.Mutex
	leaseUntil time.Time
}

func (a *activeRun) extend(until time.Time) {
	a.mu.Lock()
	if until.After(a.leaseUntil) {
		a.leaseUntil = until
	}
	a.mu.Unlock()
}

func (a *activeRun) expired(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return now.After(a.leaseUntil)
}

// lazyWith is base.With(attrs...) for a logger that most likely logs
// nothing: the attributes reach base's handler (which may format them at
// once, as slog.TextHandler does) only when a record is first handled.
func lazyWith(base *slog.Logger, attrs ...slog.Attr) *slog.Logger {
	return slog.New(&lazyAttrs{h: base.Handler(), attrs: attrs})
}

type lazyAttrs struct {
	h     slog.Handler
	attrs []slog.Attr

	once sync.Once
	with slog.Handler
}

func (l *lazyAttrs) resolved() slog.Handler {
	l.once.Do(func() { l.with = l.h.WithAttrs(l.attrs) })
	return l.with
}

func (l *lazyAttrs) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *lazyAttrs) Handle(ctx context.Context, r slog.Record) error {
	return l.resolved().Handle(ctx, r)
}

func (l *lazyAttrs) WithAttrs(attrs []slog.Attr) slog.Handler { return l.resolved().WithAttrs(attrs) }

func (l *lazyAttrs) WithGroup(name string) slog.Handler { return l.resolved().WithGroup(name) }

// runJob is an attempt that has started and waits for a runner.
type runJob struct {
	d     redisstore.Delivery
	st    redisstore.StartResult
	begun time.Time
	// deferred: the attempt is not begun in Redis yet, and st is what the
	// delivery's spec says it will be (see dispatch).
	deferred bool
}

// run hands a started attempt to an idle runner, or starts a runner for
// it. Runners live until Shutdown: a long-lived goroutine has already grown
// the stack a handler needs, where a goroutine per run would grow (copy) it
// on every run. There are never more runners than handler slots: every
// attempt holds a slot, so when all Concurrency runners exist and none is
// idle, one has just returned from its handler and is about to take the
// next job.
func (w *Worker) run(j runJob) {
	select {
	case w.work <- j:
		return
	default:
	}
	if w.runners.Add(1) <= int64(w.opts.Concurrency) {
		go w.runner(j)
		return
	}
	w.runners.Add(-1)
	w.work <- j
}

// runner runs j, then each job it is handed, until Shutdown closes w.work.
// It does not wait for an outcome to be recorded: the attempt keeps its
// slot until then (see end).
func (w *Worker) runner(j runJob) {
	for {
		w.process(j)
		var ok bool
		if j, ok = <-w.work; !ok {
			return
		}
	}
}

// attempt is one attempt this worker runs, from its start until its
// outcome is recorded: what heartbeats and cancel notices act on, the
// handler's context and the outcome to record, in one allocation.
type attempt struct {
	activeRun
	rc runContext
	// stop releases the timeout's timer; nil without a timeout.
	stop   context.CancelFunc
	finish redisstore.FinishParams

	// For a deferred attempt (see dispatch): where beginning it stands
	// (phase*), the timer that begins it after StartDelay, and a channel
	// closed once a begin that was sent has its answer.
	phase    atomic.Int32
	beginAt  *time.Timer
	answered chan struct{}
	d        redisstore.Delivery
}

// Phases of a deferred attempt. The handler's return and the StartDelay
// timer race to move it out of phaseWaiting: the first decides whether
// the attempt is begun alone (start.lua) or with its outcome (finish.lua).
const (
	phaseWaiting   int32 = iota // not begun; neither has moved yet
	phaseBeginning              // the timer fired: a start was sent
	phaseBegun                  // start.lua began it
	phaseRefused                // start.lua did not begin it, or failed
	phaseEnding                 // the handler returned first: begun with the outcome
)

// process runs the attempt j started: call the handler, record the outcome.
// Everything it writes is fenced by the attempt number. The run holds its
// slot, and counts in w.runs, until end.
func (w *Worker) process(j runJob) {
	d, st := j.d, j.st
	reg := w.tasks[d.Task]
	// The run's context does not derive from w.baseCtx: Shutdown cancels
	// the active runs one by one (see stopRuns), which spares every run
	// registering with, and removing itself from, a shared parent.
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &attempt{d: d}
	a.lease = redisstore.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt}
	a.task, a.cancel, a.leaseUntil = d.Task, cancel, j.begun.Add(w.opts.LeaseDuration)
	var runCtx context.Context = ctx
	if timeout := reg.def.Timeout; timeout > 0 {
		runCtx, a.stop = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
	}
	a.rc = runContext{
		Context: runCtx, w: w, runID: d.RunID, task: d.Task, key: st.Spec.Key, ns: w.opts.Namespace,
		attempt: st.Attempt, meta: st.Spec.Meta,
	}
	if j.deferred {
		a.answered = make(chan struct{})
		a.beginAt = time.AfterFunc(w.opts.StartDelay, func() { w.beginDeferred(a) })
	} else {
		a.begun.Store(true)
	}
	w.mu.Lock()
	// An older attempt of the run still here lost its lease (this worker
	// reclaimed its own delivery): it must stop, and not be renewed.
	if old := w.active[d.RunID]; old != nil {
		old.cancel(ErrLeaseLost)
	}
	w.active[d.RunID] = &a.activeRun
	stopping := w.stopping
	w.mu.Unlock()
	if stopping {
		cancel(ErrShutdown)
	}

	out, herr := w.call(reg.handler, &a.rc, st.Spec.Input)

	// A deferred attempt is begun with its outcome if the timer has not
	// fired yet; otherwise the outcome waits for the start's answer.
	withOutcome := false
	if j.deferred {
		if a.phase.CompareAndSwap(phaseWaiting, phaseEnding) {
			a.beginAt.Stop()
			withOutcome = true
		} else {
			<-a.answered
			if a.phase.Load() == phaseRefused {
				a.rc.Logger().Info("taskq: attempt abandoned", "cause", context.Cause(runCtx))
				w.end(a)
				return
			}
		}
	}

	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, ErrRunCancelled), errors.Is(cause, ErrLeaseLost):
		// Cancelled: the cancel already ended the run. Lease lost: the
		// run belongs to a newer attempt; writing would be refused anyway.
		a.rc.Logger().Info("taskq: attempt abandoned", "cause", cause)
		w.end(a)
		return
	case errors.Is(cause, ErrShutdown):
		if withOutcome && !w.beginNow(a) {
			w.end(a)
			return
		}
		rctx, rcancel := context.WithTimeout(context.Background(), w.opts.OperationTimeout)
		res, err := w.store.Requeue(rctx, d.RunID, d.Task, st.Attempt)
		rcancel()
		a.rc.Logger().Info("taskq: run given back on shutdown", "requeued", res.Written, "err", err)
		w.end(a)
		return
	}
	if herr == nil && cause != nil && errors.Is(cause, ErrTimeout) {
		herr = fmt.Errorf("%w after %s", ErrTimeout, reg.def.Timeout)
	}
	p := &a.finish
	*p = redisstore.FinishParams{
		RunID: d.RunID, Attempt: st.Attempt, Outcome: redisstore.OutcomeSucceeded, Payload: out,
		Task: d.Task, EntryID: d.EntryID, Spec: st.Spec,
	}
	if withOutcome {
		p.Began, p.Consumer = j.begun, w.opts.Name
	}
	if herr != nil {
		if errors.Is(cause, ErrTimeout) && !errors.Is(herr, ErrTimeout) {
			herr = fmt.Errorf("%w after %s: %v", ErrTimeout, reg.def.Timeout, herr)
		}
		p.Payload = []byte(herr.Error())
		fails := st.Spec.Fails + 1
		var nr *NonRetryableError
		if fails <= st.Spec.Retries && !errors.As(herr, &nr) {
			p.Outcome = redisstore.OutcomeRetry
			p.RetryAt = w.opts.Clock.Now().Add(reg.def.Backoff.Delay(fails))
		} else {
			p.Outcome = redisstore.OutcomeFailed
		}
		a.rc.Logger().Info("taskq: attempt failed", "err", herr, "outcome", p.Outcome)
	}
	w.finish(a)
}

// beginDeferred begins a deferred attempt whose handler has run for
// StartDelay, unless the handler returned first. The start goes out with
// the others due at the same time (w.starts). An attempt start.lua does
// not begin as this delivery's next one has its context cancelled: the
// run was cancelled, or it belongs to another delivery now.
func (w *Worker) beginDeferred(a *attempt) {
	if !a.phase.CompareAndSwap(phaseWaiting, phaseBeginning) {
		return
	}
	w.starts.Go(context.Background(), a.d, func(st redisstore.StartResult, err error) { w.begun(a, st, err) })
}

// beginNow begins a deferred attempt whose handler has returned without
// an outcome to record (the worker is shutting down), so that the run can
// be given back at once. It reports whether the attempt was begun.
func (w *Worker) beginNow(a *attempt) bool {
	st, err := w.starts.Do(context.Background(), a.d)
	w.begun(a, st, err)
	return a.phase.Load() == phaseBegun
}

// begun takes the answer to beginning a deferred attempt.
func (w *Worker) begun(a *attempt, st redisstore.StartResult, err error) {
	switch {
	case err == nil && st.Started && st.Attempt == a.lease.Attempt:
		// The lease still counts from the delivery's read: the next
		// heartbeat renews it (see Options.StartDelay).
		a.begun.Store(true)
		a.phase.Store(phaseBegun)
	case err == nil && st.Reason == "cancelled":
		// The cancel notice may not have arrived yet: give the same cause
		// it would have.
		a.phase.Store(phaseRefused)
		a.cancel(endedCause(a.lease.RunID, st.Error))
	default:
		// Another delivery owns the run now, or it ended otherwise.
		if err != nil {
			a.rc.Logger().Warn("taskq: beginning the attempt failed", "err", err)
		}
		a.phase.Store(phaseRefused)
		a.cancel(ErrLeaseLost)
	}
	if a.answered != nil {
		close(a.answered)
	}
}

// end releases what an attempt held once it is over: its entry in
// w.active (heartbeats renew its lease until then), its context, its slot.
func (w *Worker) end(a *attempt) {
	w.mu.Lock()
	if w.active[a.lease.RunID] == &a.activeRun {
		delete(w.active, a.lease.RunID)
	}
	w.mu.Unlock()
	if a.stop != nil {
		a.stop()
	}
	a.cancel(nil)
	w.releaseSlots(1)
	w.runs.Done()
}

// stopRuns cancels every active run with ErrShutdown, and every run that
// becomes active from now on as it does.
func (w *Worker) stopRuns() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopping = true
	for _, a := range w.active {
		a.cancel(ErrShutdown)
	}
}

// call runs the handler, turning a panic into an error.
func (w *Worker) call(h handlerFunc, ctx Context, input []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panicked: %v\n%s", r, debug.Stack())
		}
	}()
	return h(ctx, input)
}

// finish records the attempt's outcome and then ends it. Nothing is
// acknowledged as done before Redis holds the outcome: the attempt keeps
// its slot and its lease is renewed meanwhile. Outcomes recorded at the
// same time by several handlers go to Redis in one call of the finish
// script (w.finishes), each still fenced on its own; the runner does not
// wait for it but takes its next job.
func (w *Worker) finish(a *attempt) {
	a.finish.Now = w.opts.Clock.Now()
	// The batch is bounded by LeaseDuration (see New).
	w.finishes.Go(context.Background(), &a.finish, func(res redisstore.FinishResult, err error) {
		if err != nil {
			// Retrying waits: not on the goroutine that sent the batch.
			go w.finishRetrying(a, err)
			return
		}
		w.recorded(a, res)
	})
}

// finishRetrying retries recording an outcome after err, while Redis is
// unreachable and the lease may still be ours. If the lease lapses first,
// the run is redelivered instead.
func (w *Worker) finishRetrying(a *attempt, err error) {
	log := a.rc.Logger()
	delay := time.Duration(0)
	for {
		if a.expired(w.opts.Clock.Now()) {
			log.Warn("taskq: could not record outcome before the lease lapsed; the run will be redelivered", "err", err)
			w.end(a)
			return
		}
		delay = backoff(delay)
		log.Warn("taskq: recording outcome failed; retrying", "err", err, "in", delay)
		time.Sleep(delay)
		a.finish.Now = w.opts.Clock.Now()
		var res redisstore.FinishResult
		if res, err = w.finishes.Do(context.Background(), &a.finish); err == nil {
			w.recorded(a, res)
			return
		}
	}
}

// recorded ends an attempt whose outcome Redis answered for.
func (w *Worker) recorded(a *attempt, res redisstore.FinishResult) {
	if !res.Written {
		a.rc.Logger().Info("taskq: outcome not recorded", "reason", res.Status)
	}
	w.end(a)
}
