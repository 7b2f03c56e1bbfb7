package taskqtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// WorkTimeoutDefault bounds Work when its context has no deadline.
const WorkTimeoutDefault = 30 * time.Second

// workPoll is how often Work looks at the runs while its worker works.
const workPoll = 5 * time.Millisecond

// Work runs the queued runs of tk that are due, with handler, and returns
// once none is left: it blocks while a worker of its own (wired as
// StartWorker's, one run at a time, in the order they were queued) takes each through the
// real path of a run (delivery, attempt, handler, outcome recorded, key
// released by its strategy), then stops that worker and returns the runs
// it attempted, oldest first, as they stand: each ended, or waiting for a
// retry (queued, Info.Attempt > 0) whose backoff the harness's clock has not reached.
// Runs the handler triggers of tk are worked too; runs whose retry or
// debounce window is not due are left queued until Advance moves past it.
//
// handler runs on the worker's goroutine, not the test's: it reports a
// problem by returning an error (worker.NonRetryable to fail the run at
// once), never with t.Fatal. Work fails the test if the worker cannot
// start, if tk is handled by a worker of StartWorker (the two would compete for
// its runs), or if the runs are not done when ctx ends (or after
// WorkTimeoutDefault, if ctx has no deadline).
func Work[I, O any](ctx context.Context, t testing.TB, h *Harness, tk *task.Task[I, O], handler func(ctx worker.Context, input I) (O, error)) []*Run[I, O] {
	t.Helper()
	if h.handledByWorker(tk.Name()) {
		t.Fatalf("taskqtest: Work(%s): a worker started on the harness handles this task; it would compete with Work for the runs", tk.Name())
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, WorkTimeoutDefault)
		defer cancel()
	}
	before, err := h.runInfos(ctx)
	if err != nil {
		t.Fatalf("taskqtest: Work(%s): list runs: %v", tk.Name(), err)
	}
	attempts := map[string]int{}
	for _, info := range before {
		attempts[info.ID] = info.Attempt
	}

	opts := h.workerOptions()
	opts.Concurrency = 1
	w, err := worker.New(opts)
	if err != nil {
		t.Fatalf("taskqtest: Work(%s): make a worker: %v", tk.Name(), err)
	}
	if err := worker.Handle(w, tk, handler); err != nil {
		t.Fatalf("taskqtest: Work(%s): %v", tk.Name(), err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("taskqtest: Work(%s): start the worker: %v", tk.Name(), err)
	}
	waitErr := h.waitWorked(ctx, tk.Name())
	// Stopped whether the runs are done or not, so that no handler runs on
	// once Work has returned: at once (handlers cancelled, their runs given
	// back) if they are not.
	stopCtx, stop := context.WithCancel(context.Background())
	if waitErr != nil {
		stop()
	}
	err = w.Shutdown(stopCtx)
	stop()
	// Runs left undone are the failure to report; a worker stopped with
	// one of them still running also says so on shutdown, second.
	switch {
	case waitErr != nil && err != nil:
		t.Fatalf("taskqtest: Work(%s): %v; stop the worker: %v", tk.Name(), waitErr, err)
	case waitErr != nil:
		t.Fatalf("taskqtest: Work(%s): %v", tk.Name(), waitErr)
	case err != nil:
		t.Fatalf("taskqtest: Work(%s): stop the worker: %v", tk.Name(), err)
	}

	rctx, cancel := context.WithTimeout(context.Background(), CallTimeoutDefault)
	defer cancel()
	after, err := h.runInfos(rctx)
	if err != nil {
		t.Fatalf("taskqtest: Work(%s): list runs: %v", tk.Name(), err)
	}
	var worked []*client.RunInfo
	for _, info := range after {
		if info.Task == tk.Name() && info.Attempt > attempts[info.ID] {
			worked = append(worked, info)
		}
	}
	runs, err := typedRuns(tk, worked)
	if err != nil {
		t.Fatalf("taskqtest: Work(%s): %v", tk.Name(), err)
	}
	return runs
}

// waitWorked waits until no run of the task is running or due: each has
// ended, or waits for a retry or a debounce window that the harness's
// clock has not reached. A queued run that is not in the retry set waits
// on the task's stream for the worker.
func (h *Harness) waitWorked(ctx context.Context, taskName string) error {
	for {
		busy, err := h.busyRuns(ctx, taskName)
		if err == nil && len(busy) == 0 {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return err
		}
		t := time.NewTimer(workPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			// Read once more, past ctx, to name what is not done.
			rctx, cancel := context.WithTimeout(context.Background(), CallTimeoutDefault)
			defer cancel()
			if busy, err = h.busyRuns(rctx, taskName); err != nil {
				busy = []string{fmt.Sprintf("(the runs could not be read: %v)", err)}
			}
			return fmt.Errorf("runs not done when the context ended (%w): %s", context.Cause(ctx), strings.Join(busy, "; "))
		case <-t.C:
		}
	}
}

// busyRuns describes the runs of the task a worker has yet to attempt or
// is running.
func (h *Harness) busyRuns(ctx context.Context, taskName string) ([]string, error) {
	infos, err := h.runInfos(ctx)
	if err != nil {
		return nil, err
	}
	now := h.clock.Now()
	var busy []string
	for _, info := range infos {
		if info.Task != taskName || info.Status.Terminal() {
			continue
		}
		if info.Status == client.StatusQueued && info.ScheduledAt != nil && info.ScheduledAt.After(now) {
			continue // waits for Advance
		}
		busy = append(busy, fmt.Sprintf("run %s is %s (attempt %d)", info.ID, info.Status, info.Attempt))
	}
	return busy, nil
}
