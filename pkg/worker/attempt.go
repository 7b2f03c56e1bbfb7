package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// attempt is one attempt this worker runs, from its start until its
// outcome is recorded: what heartbeats and cancel notices act on, the
// handler's context and the outcome to record, in one allocation.
type attempt struct {
	activeRun
	rc runContext
	// stop releases the timeout's timer; nil without a timeout.
	stop   context.CancelFunc
	finish engine.FinishParams
	// startedAt is when the worker began the attempt (its handler's run
	// time counts from then in the run statistics).
	startedAt time.Time
	// recording: the handler returned and its slot was handed back; the
	// attempt holds a recording token until its outcome is recorded.
	recording bool

	// For a deferred attempt (see processor.dispatch): where beginning it
	// stands (phase*), the timer that begins it after StartDelay, and
	// answered, done once a begin that was sent has its answer (a
	// WaitGroup rather than a channel: it needs no allocation of its own).
	phase    atomic.Int32
	beginAt  *time.Timer
	answered sync.WaitGroup
	d        engine.Delivery
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

// answer takes the answer to beginning a deferred attempt.
func (a *attempt) answer(st engine.StartResult, err error) {
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
	// Only a deferred attempt is answered, and only once: by the start
	// its timer sent, or by beginNow once its handler has returned.
	a.answered.Done()
}
