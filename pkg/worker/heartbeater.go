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
func (w *Worker) heartbeat(quit <-chan struct{}) {
	for sleep(quit, w.opts.HeartbeatInterval) {
		w.beat()
	}
}

func (w *Worker) beat() {
	began := w.opts.Clock.Now()
	byTask := map[string][]*activeRun{}
	w.mu.Lock()
	for _, a := range w.active {
		// An attempt not begun yet has no lease to renew in Redis: it is
		// begun, or ends, within StartDelay of its delivery.
		if a.begun.Load() {
			byTask[a.task] = append(byTask[a.task], a)
		}
	}
	w.mu.Unlock()
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

// endedCause is the cause a handler's context is cancelled with when its
// run turned out to have been cancelled, given the run's error: the same
// the cancel notice gives (see listenCancels).
func endedCause(runID, runError string) error {
	if by, ok := strings.CutPrefix(runError, supersededPrefix); ok {
		return &SupersededError{RunID: runID, By: by}
	}
	return ErrRunCancelled
}
