package taskqtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// ErrNotEnded is returned by Run.Result for a run that is still queued or
// running, or waits for a retry.
var ErrNotEnded = errors.New("run has not ended")

// Run is a run of a task as the harness found it: its input, decoded, and
// the rest of its record as the client reports it (ID, status, attempt,
// idempotency key, metadata, result, error).
type Run[I, O any] struct {
	// Input is the run's input, decoded as the task's input type.
	Input I
	// Info is the run's record at the moment it was read.
	Info *client.RunInfo
}

// Result returns the result of a run that succeeded, decoded; the
// *client.RunError of its failure or cancellation for one that did not; or an error matching
// ErrNotEnded for one not ended yet, naming its status and its last error.
// It reads the record the Run holds and does not wait: to wait for a run,
// use client.Ref(h.Client(), r.Info.ID).Result(ctx). A run whose last
// attempt failed and waits for a retry is queued with Info.Attempt > 0.
func (r *Run[I, O]) Result() (O, error) {
	var out O
	info := r.Info
	switch {
	case info.Status == client.StatusSucceeded:
		if len(info.Result) > 0 {
			if err := json.Unmarshal(info.Result, &out); err != nil {
				return out, fmt.Errorf("run %s: decode result: %w", info.ID, err)
			}
		}
		return out, nil
	case info.Status.Terminal():
		return out, info.Err()
	case info.Error != "":
		return out, fmt.Errorf("%w: run %s is %s after attempt %d, which failed: %s", ErrNotEnded, info.ID, info.Status, info.Attempt, info.Error)
	default:
		return out, fmt.Errorf("%w: run %s is %s (attempt %d)", ErrNotEnded, info.ID, info.Status, info.Attempt)
	}
}

// Runs returns every run of tk in the harness, oldest first, whatever its
// status: what was triggered, directly or by an event, and accepted. A
// trigger rejected as a duplicate created no run and is not among them; a
// run whose record expired (its retention passed, see Advance) is gone.
func Runs[I, O any](t testing.TB, h *Harness, tk *task.Task[I, O]) []*Run[I, O] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeoutDefault)
	defer cancel()
	infos, err := h.runInfos(ctx)
	if err != nil {
		t.Fatalf("taskqtest: list the runs of %s: %v", tk.Name(), err)
	}
	runs, err := typedRuns(tk, infos)
	if err != nil {
		t.Fatalf("taskqtest: %v", err)
	}
	return runs
}

// typedRuns decodes the inputs of the runs of tk among infos.
func typedRuns[I, O any](tk *task.Task[I, O], infos []*client.RunInfo) ([]*Run[I, O], error) {
	var out []*Run[I, O]
	for _, info := range infos {
		if info.Task != tk.Name() {
			continue
		}
		r := &Run[I, O]{Info: info}
		if err := json.Unmarshal(info.Input, &r.Input); err != nil {
			return nil, fmt.Errorf("run %s of %s: decode input %s: %w", info.ID, tk.Name(), info.Input, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// runInfos reads every run of the namespace, oldest first, through the
// client's Inspector, as users see them.
func (h *Harness) runInfos(ctx context.Context) ([]*client.RunInfo, error) {
	var out []*client.RunInfo
	o := client.ListOptions{Limit: client.ListLimitMax}
	for {
		page, err := h.client.Inspector().ListRuns(ctx, o)
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			break
		}
	}
	slices.Reverse(out) // newest first in the listing
	return out, nil
}
