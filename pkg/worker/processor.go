package worker

import (
	"context"
	"errors"
	"fmt"
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

// process runs one delivery: start the attempt, call the handler, record
// the outcome. Everything it writes is fenced by the attempt number.
func (w *Worker) process(d redisstore.Delivery) {
	reg := w.tasks[d.Task]
	begun := w.opts.Clock.Now()
	st, err := w.store.Start(w.baseCtx, &redisstore.StartParams{
		RunID: d.RunID, Task: d.Task, EntryID: d.EntryID, Consumer: w.opts.Name, Now: begun,
	})
	if err != nil {
		// The delivery stays pending and is reclaimed once its lease lapses.
		w.log.Warn("taskq: starting run failed", "run", d.RunID, "task", d.Task, "err", err)
		return
	}
	if !st.Started {
		w.log.Debug("taskq: delivery skipped", "run", d.RunID, "reason", st.Reason)
		return
	}
	log := w.log.With("run", d.RunID, "task", d.Task, "attempt", st.Attempt)
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
func (w *Worker) finish(a *activeRun, p *redisstore.FinishParams, log interface {
	Info(string, ...any)
	Warn(string, ...any)
}) {
	delay := time.Duration(0)
	for {
		p.Now = w.opts.Clock.Now()
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.LeaseDuration)
		res, err := w.store.Finish(ctx, p)
		cancel()
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
