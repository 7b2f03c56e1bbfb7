package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// leaseStore is what the heartbeater reads and writes in Redis.
type leaseStore interface {
	Heartbeat(ctx context.Context, task, consumer string, leases []engine.Lease) ([]engine.LeaseReport, error)
	RunStates(ctx context.Context, ids []string) ([]engine.RunState, error)
}

// heartbeater renews the leases of every running attempt each interval,
// one script call per task stream. An attempt whose lease was taken over,
// or whose run was cancelled or ended, has its context cancelled; so has
// one whose lease ran out while Redis was unreachable. Attempts not begun
// yet have no lease to renew, but their runs are looked at too (see
// checkWaiting).
type heartbeater struct {
	startStop
	store    leaseStore
	active   *activeRuns
	consumer string
	lease    time.Duration
	interval time.Duration
	clock    task.Clock
	log      *slog.Logger
	metrics  *workerMetrics
	// conc renews the concurrency slots this worker holds (nil: none can).
	conc *concurrencyGate
}

// Start starts the heartbeats; it is ready at once, the first beat due
// one interval later.
func (h *heartbeater) Start(context.Context) error {
	return h.begin(func(quit <-chan struct{}) {
		for sleep(quit, h.interval) {
			h.beat()
		}
		h.conc.wait()
	})
}

func (h *heartbeater) beat() {
	began := h.clock.Now()
	byTask, waiting := h.active.split()
	h.checkWaiting(waiting)
	defer h.conc.beat() // after the leases: it must never delay them
	for t, runs := range byTask {
		leases := make([]engine.Lease, len(runs))
		for i, a := range runs {
			leases[i] = a.lease
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.interval)
		states, err := h.store.Heartbeat(ctx, t, h.consumer, leases)
		cancel()
		if err != nil {
			h.log.Warn("taskq: heartbeat failed", "task", t, "err", err)
			for _, a := range runs {
				if a.expired(h.clock.Now()) {
					a.cancel(ErrLeaseLost)
				}
			}
			continue
		}
		for i, a := range runs {
			switch states[i].State {
			case engine.LeaseHeld:
				a.extend(began.Add(h.lease))
				h.metrics.leaseRenewed()
			case engine.LeaseLost, engine.LeaseStale:
				a.cancel(ErrLeaseLost)
			case engine.LeaseFinished:
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
func (h *heartbeater) checkWaiting(runs []*activeRun) {
	if len(runs) == 0 {
		return
	}
	ids := make([]string, len(runs))
	for i, a := range runs {
		ids[i] = a.lease.RunID
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.interval)
	states, err := h.store.RunStates(ctx, ids)
	cancel()
	if err != nil {
		h.log.Warn("taskq: heartbeat failed to read runs not begun yet", "err", err)
		return
	}
	for i, a := range runs {
		switch st := states[i]; {
		case st.Status == "":
			// The record is gone (expired, or Redis lost its data):
			// beginning the attempt would be refused.
			a.cancel(ErrLeaseLost)
		case engine.IsTerminal(st.Status):
			a.cancel(endedCause(a.lease.RunID, st.Error))
		}
	}
}
