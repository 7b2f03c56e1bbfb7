package worker

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// ShutdownError says Shutdown ended with runs this worker held that it
// could neither give back to the queue nor record the outcome of: Redis did
// not answer in time, or a handler ignored its context's cancellation past
// ShutdownTimeout. Nothing of them is lost. Each stays pending under this
// worker's lease, and another worker takes it over once the lease lapses
// (LeaseDuration after its last renewal) and runs it again; the attempt
// counts as one delivery among the task's MaxDeliveries. Run and Shutdown
// return it; match it with errors.As.
type ShutdownError struct {
	// Runs are the runs left behind, by run ID.
	Runs []ShutdownRun
	// Lease is the worker's LeaseDuration: the runs are delivered again
	// within about this long.
	Lease time.Duration
}

// ShutdownRun is one run a Shutdown left behind, and why.
type ShutdownRun struct {
	ID   string
	Task string
	// Err is why: the hand-back or the outcome's write failed (Redis did
	// not answer), or the handler had not returned by the end of
	// ShutdownTimeout.
	Err error
}

// Error names the runs left behind and when they are delivered again.
func (e *ShutdownError) Error() string {
	var b strings.Builder
	if len(e.Runs) == 1 {
		b.WriteString("shutdown could not give back or record the outcome of 1 run (")
	} else {
		fmt.Fprintf(&b, "shutdown could not give back or record the outcomes of %d runs (", len(e.Runs))
	}
	for i, r := range e.Runs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "run %s of task %q: %v", r.ID, r.Task, r.Err)
	}
	fmt.Fprintf(&b, "); they will be delivered again when their leases end, within LeaseDuration (%s)", e.Lease)
	return b.String()
}

// Unwrap returns each run's error, so that errors.Is finds a deadline or
// a refused connection among them.
func (e *ShutdownError) Unwrap() []error {
	out := make([]error, 0, len(e.Runs))
	for _, r := range e.Runs {
		out = append(out, r.Err)
	}
	return out
}

// errHandlerRunning is why a run whose handler had not returned by the end
// of the shutdown was left behind.
var errHandlerRunning = errors.New("handler still running or outcome not yet written when ShutdownTimeout ran out")

// handBackReserve is the part of ShutdownTimeout kept, after handlers are
// cancelled, for giving their runs back and writing the last outcomes:
// a quarter of it, at most OperationTimeout.
func handBackReserve(shutdown, op time.Duration) time.Duration {
	return min(shutdown/4, op)
}

// leftBehind collects the runs a shutdown could not give back or record.
type leftBehind struct {
	mu   sync.Mutex
	runs map[string]ShutdownRun
}

func (l *leftBehind) add(id, task string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[string]ShutdownRun{}
	}
	l.runs[id] = ShutdownRun{ID: id, Task: task, Err: err}
}

// error returns the *ShutdownError of the runs collected and of those
// still active, or nil when there are none.
func (l *leftBehind) error(active *activeRuns, lease time.Duration) error {
	l.mu.Lock()
	runs := make(map[string]ShutdownRun, len(l.runs))
	for id, r := range l.runs {
		runs[id] = r
	}
	l.mu.Unlock()
	active.mu.Lock()
	for id, a := range active.runs {
		if _, ok := runs[id]; !ok {
			runs[id] = ShutdownRun{ID: id, Task: a.task, Err: errHandlerRunning}
		}
	}
	active.mu.Unlock()
	if len(runs) == 0 {
		return nil
	}
	e := &ShutdownError{Lease: lease}
	for _, r := range runs {
		e.Runs = append(e.Runs, r)
	}
	sort.Slice(e.Runs, func(i, j int) bool { return e.Runs[i].ID < e.Runs[j].ID })
	return e
}

// shutdownCtx is the context of the processor's writes during a shutdown:
// it ends when the shutdown must end. Before a shutdown it never ends.
func (p *processor) shutdownCtx() context.Context {
	if c := p.halt.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// opCtx bounds a write by OperationTimeout and, during a shutdown, by the
// shutdown's end.
func (p *processor) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(p.shutdownCtx(), p.opTimeout)
}
