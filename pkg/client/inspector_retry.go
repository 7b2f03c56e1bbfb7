package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// ErrNotRetryable is the Kind of a *StateError saying RetryRun refused a
// run: only a failed or cancelled run that was not retried yet can be
// retried.
var ErrNotRetryable = errors.New("run cannot be retried")

// retryable reports whether RetryRun would retry the run: it failed or was
// cancelled, and was not retried yet.
func (i *RunInfo) retryable() bool {
	return (i.Status == StatusFailed || i.Status == StatusCancelled) && i.RetriedBy == ""
}

// RetryRun triggers a failed or cancelled run again: a new run of the same
// task with the same input and metadata, through the same path as any
// trigger, so the task's idempotency key is derived and claimed anew. A
// key still held (by retention, or by another run) fails it with an
// *IdempotencyCollisionError naming the owner, whatever the task's conflict
// policy: a retry never attaches to, supersedes or signals another run. The
// new run's RetryOf names the original, and the original's RetriedBy the
// new run. A run that is queued, running or succeeded, or was already
// retried, fails with a *StateError of Kind ErrNotRetryable; one whose
// task no worker registered, with an error matching ErrTaskNotFound. The
// registered definition of the task is used, as it is now. Like every
// trigger it returns a handle or an error, never both: a retry whose write
// fell short of its durability is linked all the same, and returns a
// *DurabilityError whose Run is the new run.
//
// Under the debounce strategy a queued owner of the key may take the input
// instead (the handle's TriggerInfo().Outcome is OutcomeDebounced): no run is
// created and nothing is linked.
func (in *Inspector) RetryRun(ctx context.Context, runID string) (*RunHandle, error) {
	orig, err := in.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if !orig.retryable() {
		return nil, &StateError{Kind: ErrNotRetryable, RunID: runID, Status: orig.Status, RetriedBy: orig.RetriedBy}
	}
	def, err := in.c.Definition(ctx, orig.Task)
	if err != nil {
		return nil, fmt.Errorf("retry run %s: %w", runID, err)
	}
	h, err := in.c.TriggerJSON(ctx, def, orig.Input, WithMetadata(orig.Metadata), OnConflict(task.ConflictReject),
		WithPriority(max(orig.Priority, engine.PriorityDefault)))
	var short *DurabilityError
	switch {
	case errors.As(err, &short) && short.Collision == nil:
		// The new run was written, short of its durability: link it all
		// the same, and say it fell short.
		h = short.Run
	case err != nil:
		return nil, err
	}
	if o := h.trigger.Outcome; o == OutcomeCreated || o == "" {
		lctx, cancel := in.c.opCtx(ctx)
		defer cancel()
		// A retry of the same run at the same moment may have linked
		// first: its link is kept, and this run still names the run it
		// retries.
		if _, lerr := in.c.store.LinkRetry(lctx, runID, h.ID()); lerr != nil {
			return nil, fmt.Errorf("retry run %s: run %s was created, but linking the two failed: %w", runID, h.ID(), in.c.unavailable(lctx, lerr))
		}
	}
	if err != nil {
		return nil, err
	}
	return h, nil
}
