package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// activeRun is an attempt this worker is running.
type activeRun struct {
	lease  redisstore.Lease
	task   string
	cancel context.CancelCauseFunc

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
}

// run hands a started attempt to an idle runner, or starts a runner for
// it. Runners live until Shutdown: a long-lived goroutine has already grown
// the stack a handler needs, where a goroutine per run would grow (copy) it
// on every run. There are never more runners than handler slots: every
// attempt holds a slot, so when all Concurrency runners exist and none is
// idle, one has just released its slot and is about to take the next job.
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
func (w *Worker) runner(j runJob) {
	for {
		w.process(j.d, j.st, j.begun)
		w.releaseSlots(1)
		w.runs.Done()
		var ok bool
		if j, ok = <-w.work; !ok {
			return
		}
	}
}

// process runs one delivery whose attempt st has started (at begun, when
// the start was sent): call the handler, record the outcome. Everything it
// writes is fenced by the attempt number.
func (w *Worker) process(d redisstore.Delivery, st redisstore.StartResult, begun time.Time) {
	reg := w.tasks[d.Task]
	log := lazyWith(w.log, slog.String("run", d.RunID), slog.String("task", d.Task), slog.Int("attempt", st.Attempt))
	ctx, cancel := context.WithCancelCause(w.baseCtx)
	defer cancel(nil)
	var runCtx context.Context = ctx
	if timeout := reg.def.Timeout; timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(ctx, timeout, ErrTimeout)
		defer stop()
	}
	a := &activeRun{
		lease: redisstore.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt},
		task:  d.Task, cancel: cancel, leaseUntil: begun.Add(w.opts.LeaseDuration),
	}
	w.mu.Lock()
	w.active[d.RunID] = a
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.active, d.RunID)
		w.mu.Unlock()
	}()

	rc := &runContext{
		Context: runCtx, w: w, runID: d.RunID, task: d.Task, key: st.Key, ns: w.opts.Namespace,
		attempt: st.Attempt, meta: st.Meta, log: log,
	}
	out, herr := w.call(reg.handler, rc, st.Input)

	cause := context.Cause(runCtx)
	switch {
	case errors.Is(cause, ErrRunCancelled), errors.Is(cause, ErrLeaseLost):
		// Cancelled: the cancel already ended the run. Lease lost: the
		// run belongs to a newer attempt; writing would be refused anyway.
		log.Info("taskq: attempt abandoned", "cause", cause)
		return
	case errors.Is(cause, ErrShutdown):
		res, err := w.store.Requeue(context.Background(), d.RunID, d.Task, st.Attempt)
		log.Info("taskq: run given back on shutdown", "requeued", res.Written, "err", err)
		return
	}
	if herr == nil && cause != nil && errors.Is(cause, ErrTimeout) {
		herr = fmt.Errorf("%w after %s", ErrTimeout, reg.def.Timeout)
	}
	p := &redisstore.FinishParams{RunID: d.RunID, Attempt: st.Attempt, Outcome: redisstore.OutcomeSucceeded, Payload: out}
	if herr != nil {
		if errors.Is(cause, ErrTimeout) && !errors.Is(herr, ErrTimeout) {
			herr = fmt.Errorf("%w after %s: %v", ErrTimeout, reg.def.Timeout, herr)
		}
		p.Payload = []byte(herr.Error())
		fails := st.Fails + 1
		var nr *NonRetryableError
		if fails <= st.Retries && !errors.As(herr, &nr) {
			p.Outcome = redisstore.OutcomeRetry
			p.RetryAt = w.opts.Clock.Now().Add(reg.def.Backoff.Delay(fails))
		} else {
			p.Outcome = redisstore.OutcomeFailed
		}
		log.Info("taskq: attempt failed", "err", herr, "outcome", p.Outcome)
	}
	w.finish(a, p, log)
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

// finish records the outcome, retrying while Redis is unreachable and the
// lease may still be ours: nothing is acknowledged as done before Redis
// holds it. If the lease lapses first, the run is redelivered instead.
// Outcomes recorded at the same time by several handlers go to Redis in one
// pipeline (w.finishes), each still its own fenced script call.
func (w *Worker) finish(a *activeRun, p *redisstore.FinishParams, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	delay := time.Duration(0)
	for {
		p.Now = w.opts.Clock.Now()
		// The batch is bounded by LeaseDuration (see New).
		res, err := w.finishes.Do(context.Background(), p)
		if err == nil {
			if !res.Written {
				log.Info("taskq: outcome not recorded", "reason", res.Status)
			}
			return
		}
		if a.expired(w.opts.Clock.Now()) {
			log.Warn("taskq: could not record outcome before the lease lapsed; the run will be redelivered", "err", err)
			return
		}
		delay = backoff(delay)
		log.Warn("taskq: recording outcome failed; retrying", "err", err, "in", delay)
		time.Sleep(delay)
	}
}
