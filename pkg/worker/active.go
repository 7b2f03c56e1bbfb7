package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// activeRun is an attempt this worker is running: what heartbeats and
// cancel notices act on.
type activeRun struct {
	lease  engine.Lease
	task   string
	cancel context.CancelCauseFunc
	// begun is set once Redis holds the attempt as begun: heartbeats renew
	// only the leases of begun attempts (see processor.process).
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

// activeRuns is the table of the attempts this worker runs, by run ID. The
// processor adds and removes them; the heartbeater renews their leases and
// the canceller cancels them.
type activeRuns struct {
	mu   sync.Mutex
	runs map[string]*activeRun
	// stopping is set once the processor stops (see cancelAll).
	stopping bool
}

func newActiveRuns() *activeRuns { return &activeRuns{runs: map[string]*activeRun{}} }

// add enters a. An older attempt of the same run still here lost its lease
// (this worker reclaimed its own delivery): it is cancelled, and no longer
// renewed. add reports whether the worker is stopping, in which case the
// caller cancels a as cancelAll would have.
func (t *activeRuns) add(a *activeRun) (stopping bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old := t.runs[a.lease.RunID]; old != nil {
		old.cancel(ErrLeaseLost)
	}
	t.runs[a.lease.RunID] = a
	return t.stopping
}

// remove takes a out, unless a newer attempt of its run replaced it.
func (t *activeRuns) remove(a *activeRun) {
	t.mu.Lock()
	if t.runs[a.lease.RunID] == a {
		delete(t.runs, a.lease.RunID)
	}
	t.mu.Unlock()
}

// len is the number of attempts held.
func (t *activeRuns) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.runs)
}

// get returns the attempt of runID, or nil.
func (t *activeRuns) get(runID string) *activeRun {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[runID]
}

// split returns the begun attempts by task, and the attempts not begun yet.
func (t *activeRuns) split() (begun map[string][]*activeRun, waiting []*activeRun) {
	begun = map[string][]*activeRun{}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.runs {
		if a.begun.Load() {
			begun[a.task] = append(begun[a.task], a)
		} else {
			waiting = append(waiting, a)
		}
	}
	return begun, waiting
}

// cancelAll cancels every attempt with cause, and marks the table stopping
// so that add reports it for every attempt entered from now on.
func (t *activeRuns) cancelAll(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopping = true
	for _, a := range t.runs {
		a.cancel(cause)
	}
}
