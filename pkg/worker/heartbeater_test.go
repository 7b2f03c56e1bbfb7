package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// testRun enters an attempt of runID into active and returns the cause its
// context will be cancelled with.
func testRun(active *activeRuns, runID string, begun bool, leaseUntil time.Time) (*activeRun, context.Context) {
	ctx, cancel := context.WithCancelCause(context.Background())
	a := &activeRun{lease: engine.Lease{EntryID: "1-0", RunID: runID, Attempt: 1}, task: "t", cancel: cancel, leaseUntil: leaseUntil}
	a.begun.Store(begun)
	active.add(a)
	return a, ctx
}

// One beat renews a held lease, stops the handler of a lost one with
// ErrLeaseLost and of a run superseded meanwhile with its
// *client.RunError, and stops the handler of an attempt not begun yet whose
// run was cancelled.
func TestHeartbeaterBeat(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{
		heartbeat: func(_ string, leases []engine.Lease) ([]engine.LeaseReport, error) {
			out := make([]engine.LeaseReport, len(leases))
			for i, l := range leases {
				switch l.RunID {
				case "held":
					out[i].State = engine.LeaseHeld
				case "lost":
					out[i].State = engine.LeaseLost
				case "superseded":
					out[i] = engine.LeaseReport{State: engine.LeaseFinished, Reason: cancelreason.Superseded("r9")}
				}
			}
			return out, nil
		},
		runStates: func(ids []string) ([]engine.RunState, error) {
			out := make([]engine.RunState, len(ids))
			for i := range ids {
				out[i] = engine.RunState{Status: engine.StatusCancelled}
			}
			return out, nil
		},
	}
	active := newActiveRuns()
	held, heldCtx := testRun(active, "held", true, now)
	_, lostCtx := testRun(active, "lost", true, now)
	_, supCtx := testRun(active, "superseded", true, now)
	_, waitCtx := testRun(active, "waiting", false, now)
	h := &heartbeater{store: st, active: active, consumer: "w", lease: time.Minute, interval: time.Second,
		clock: fixedClock{now}, log: discard}
	h.beat()

	if heldCtx.Err() != nil {
		t.Fatalf("held lease: context ended with %v", context.Cause(heldCtx))
	}
	if held.expired(now.Add(59 * time.Second)) {
		t.Fatal("held lease not renewed for the lease duration")
	}
	if err := context.Cause(lostCtx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("lost lease: cause %v, want ErrLeaseLost", err)
	}
	var se *client.RunError
	if err := context.Cause(supCtx); !(errors.As(err, &se) && se.Group == "") || se.By != "r9" {
		t.Fatalf("superseded run: cause %v, want a *client.RunError by r9", err)
	}
	if err := context.Cause(waitCtx); !errors.Is(err, task.ErrRunCancelled) {
		t.Fatalf("cancelled run not begun yet: cause %v, want ErrRunCancelled", err)
	}
}

// While Redis does not answer, a lease is kept until it runs out, then its
// handler is stopped with ErrLeaseLost.
func TestHeartbeaterFailingKeepsLeaseUntilItRunsOut(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &fakeStore{heartbeat: func(string, []engine.Lease) ([]engine.LeaseReport, error) { return nil, errFake }}
	active := newActiveRuns()
	_, liveCtx := testRun(active, "live", true, now.Add(time.Second))
	_, goneCtx := testRun(active, "gone", true, now.Add(-time.Second))
	h := &heartbeater{store: st, active: active, consumer: "w", lease: time.Minute, interval: time.Second,
		clock: fixedClock{now}, log: discard}
	h.beat()
	if liveCtx.Err() != nil {
		t.Fatal("a lease still valid was given up on a failed heartbeat")
	}
	if err := context.Cause(goneCtx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("expired lease: cause %v, want ErrLeaseLost", err)
	}
}
