package worker

import (
	"context"
	"strings"

	"github.com/taskq/taskq/internal/redisstore"
)

// heartbeat renews the leases of every running attempt each
// HeartbeatInterval, one script call per task stream. An attempt whose
// lease was taken over, or whose run was cancelled or ended, has its context
// cancelled; so has one whose lease ran out while Redis was unreachable.
// Attempts not begun yet have no lease to renew, but their runs are looked
// at too (see checkWaiting).
func (w *Worker) heartbeat(quit <-chan struct{}) {
	for sleep(quit, w.opts.HeartbeatInterval) {
		w.beat()
	}
}

func (w *Worker) beat() {
	began := w.opts.Clock.Now()
	byTask := map[string][]*activeRun{}
	var waiting []*activeRun
	w.mu.Lock()
	for _, a := range w.active {
		if a.begun.Load() {
			byTask[a.task] = append(byTask[a.task], a)
		} else {
			waiting = append(waiting, a)
		}
	}
	w.mu.Unlock()
	w.checkWaiting(waiting)
	for t, runs := range byTask {
		leases := make([]redisstore.Lease, len(runs))
		for i, a := range runs {
			leases[i] = a.lease
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.HeartbeatInterval)
		states, err := w.store.Heartbeat(ctx, t, w.opts.Name, leases)
		cancel()
		if err != nil {
			w.log.Warn("taskq: heartbeat failed", "task", t, "err", err)
			for _, a := range runs {
				if a.expired(w.opts.Clock.Now()) {
					a.cancel(ErrLeaseLost)
				}
			}
			continue
		}
		for i, a := range runs {
			switch states[i].State {
			case redisstore.LeaseHeld:
				a.extend(began.Add(w.opts.LeaseDuration))
			case redisstore.LeaseLost, redisstore.LeaseStale:
				a.cancel(ErrLeaseLost)
			case redisstore.LeaseFinished:
				// The cancel notice may not have arrived yet: give the
				// same cause it would have.
				a.cancel(endedCause(a.lease.RunID, states[i].Reason))
			}
		}
	}
}

// checkWaiting stops the handlers of attempts not begun yet whose runs
// have ended. Such an attempt has no lease in Redis to renew (it is begun,
// or ends, within StartDelay of its delivery), but its run can be
// cancelled meanwhile, and the cancel notice missed while the subscription
// was being re-established: its handler must not run on until StartDelay.
func (w *Worker) checkWaiting(runs []*activeRun) {
	if len(runs) == 0 {
		return
	}
	ids := make([]string, len(runs))
	for i, a := range runs {
		ids[i] = a.lease.RunID
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.HeartbeatInterval)
	states, err := w.store.RunStates(ctx, ids)
	cancel()
	if err != nil {
		w.log.Warn("taskq: heartbeat failed to read runs not begun yet", "err", err)
		return
	}
	for i, a := range runs {
		switch st := states[i]; {
		case st.Status == "":
			// The record is gone (expired, or Redis lost its data):
			// beginning the attempt would be refused.
			a.cancel(ErrLeaseLost)
		case redisstore.IsTerminal(st.Status):
			a.cancel(endedCause(a.lease.RunID, st.Error))
		}
	}
}

// endedCause is the cause a handler's context is cancelled with when its
// run turned out to have been cancelled, given the run's error: the same
// the cancel notice gives (see listenCancels).
func endedCause(runID, runError string) error {
	if by, ok := strings.CutPrefix(runError, supersededPrefix); ok {
		return &SupersededError{RunID: runID, By: by}
	}
	return ErrRunCancelled
}
