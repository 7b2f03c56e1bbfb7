package client

import (
	"errors"
	"fmt"
	"strings"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
	"github.com/taskq/taskq/pkg/task"
)

// ErrIdempotencyCollision matches every *IdempotencyCollisionError and
// *BulkCollisionError.
var ErrIdempotencyCollision = errors.New("idempotency collision")

// ErrRunNotFound is returned for a run ID that does not exist, or whose
// record has been removed after its retention.
var ErrRunNotFound = engine.ErrRunNotFound

// ErrRunFailed matches every *RunError of a failed run.
var ErrRunFailed = errors.New("run failed")

// ErrOutOfMemory matches the error of a trigger (or a signal, an event, a
// step result) that Redis refused because its memory is at maxmemory;
// nothing was written, and retrying later succeeds. errors.Is(err, ErrUnavailable)
// holds for it too. See docs/operations.md.
var ErrOutOfMemory = engine.ErrOutOfMemory

// ErrRedisReadOnly matches a write a read-only replica refused, as a
// master demoted by a failover does until clients reach the new one;
// nothing was written, and retrying once the failover has settled is safe. errors.Is(err,
// ErrUnavailable) holds for it too.
var ErrRedisReadOnly = engine.ErrReadOnly

// ErrWrongType matches a call refused because a Redis key taskq needs
// holds a value of another type (something else wrote there); the error
// names the key and the type found.
var ErrWrongType = engine.ErrWrongType

// ErrEvictingRedis matches the errors with which New refuses a Redis whose
// maxmemory-policy may evict keys , or that does not
// tell its policy; the error names the master and the policy.
// Options.AllowEvictingRedis accepts the risk.
var ErrEvictingRedis = redisguard.ErrEvictingPolicy

// ErrPartitionsMismatch matches the error with which New (or the first
// call) fails when Options.Partitions is not the partition count the
// namespace recorded when it was first used; its message names both.
var ErrPartitionsMismatch = engine.ErrPartitionsMismatch

// ErrInvalidNamespace matches the error with which New refuses an
// Options.Namespace that is not a valid name (1 to 64 characters of A-Z
// a-z 0-9 _ . : -).
var ErrInvalidNamespace = engine.ErrInvalidNamespace

// ErrInputTooLarge matches every *LimitError.
var ErrInputTooLarge = errors.New("over a size limit")

// IdempotencyCollisionError says a trigger was not run because another run
// owns its idempotency key. Owner is a handle to that run: its status and
// result are one call away.
type IdempotencyCollisionError struct {
	Task          string
	Key           string
	ExistingRunID string
	// Owner is a handle to the existing run.
	Owner *RunHandle
}

// Error names the task, the key and the run that holds it.
func (e *IdempotencyCollisionError) Error() string {
	return fmt.Sprintf("idempotency collision: task %q key %q is held by run %s", e.Task, e.Key, e.ExistingRunID)
}

// Is makes errors.Is(err, ErrIdempotencyCollision) hold.
func (e *IdempotencyCollisionError) Is(target error) bool { return target == ErrIdempotencyCollision }

// BulkCollisionError lists the triggers of a RunMany (TriggerManyJSON)
// that collided: their refs are nil, and the others of the batch were
// triggered as usual.
type BulkCollisionError struct {
	// Collisions name each key and its owner.
	Collisions []*IdempotencyCollisionError
	// Indexes line up with Collisions: the position of each trigger that
	// collided in its batch, ascending.
	Indexes []int
}

// Error names each trigger that collided, its key and the run that holds it.
func (e *BulkCollisionError) Error() string {
	parts := make([]string, 0, len(e.Collisions))
	for i, c := range e.Collisions {
		parts = append(parts, fmt.Sprintf("#%d key %q held by run %s", e.Indexes[i], c.Key, c.ExistingRunID))
	}
	return fmt.Sprintf("idempotency collision on %d trigger(s): %s", len(e.Collisions), strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrIdempotencyCollision) hold.
func (e *BulkCollisionError) Is(target error) bool { return target == ErrIdempotencyCollision }

// BatchItemError says which trigger of a batch was invalid. Nothing of the
// batch was written.
type BatchItemError struct {
	Index int
	Err   error
}

// Error names the trigger by its index and says what befell it.
func (e *BatchItemError) Error() string { return fmt.Sprintf("trigger #%d: %v", e.Index, e.Err) }

// Unwrap returns the item's error.
func (e *BatchItemError) Unwrap() error { return e.Err }

// LimitError says something is over one of the client's size limits:
// a trigger's input, its metadata or a batch of triggers, a signal's
// payload or a run's count of signals, or an event's payload or metadata
// (the event ingester applies the client's limits; its *InvalidEventError
// wraps this error and names the event). Nothing was written.
type LimitError struct {
	// What is over: "input", "additional_metadata", "batch", "signal
	// payload", "signals of run <id>", or an event's "payload" or
	// "metadata".
	What  string
	Size  int
	Limit int
	// Unit counts Size and Limit: "bytes" when empty, "triggers" for a
	// batch when empty, or "events" or "signals".
	Unit string
}

// Error says what is over which limit, and by how much.
func (e *LimitError) Error() string {
	unit := e.Unit
	switch {
	case unit != "":
	case e.What == "batch":
		unit = "triggers"
	default:
		unit = "bytes"
	}
	return fmt.Sprintf("%s is %d %s, over the limit of %d", e.What, e.Size, unit, e.Limit)
}

// Is makes errors.Is(err, ErrInputTooLarge) hold.
func (e *LimitError) Is(target error) bool { return target == ErrInputTooLarge }

// RunError is the result of a run that ended without succeeding: Status
// says how. errors.Is(err, ErrRunFailed) holds for a failed run, and
// errors.Is(err, task.ErrRunCancelled) for a cancelled one (with
// task.ErrConcurrencyCancelled too when its concurrency group cancelled it).
//
// A waiter gets one (Run, RunRef.Result, RunInfo.Err), and so does a
// handler whose run another run took the place of: its context's cause
// (context.Cause) is a *RunError of StatusCancelled with By set, and Group
// too when its concurrency group cancelled it.
type RunError struct {
	RunID string
	// Status is StatusFailed (after the run's last attempt) or
	// StatusCancelled.
	Status Status
	// Attempts counts the attempts the run made (0 in a handler's cause).
	Attempts int
	// Message is the last attempt's error (failed), or why the run was
	// cancelled: "cancelled by request", "superseded by run <id>",
	// "displaced by run <id> in concurrency group <group>", ...
	Message string
	// Group is set when the run's concurrency group cancelled it: a newer
	// run of the group, By, took its slot (task.CancelInProgress), or By
	// is "" when the group was full as the run came (task.CancelNewest).
	// With Group "", By is the newer run that superseded it
	// (task.ConflictSupersede), if one did.
	Group string
	By    string
}

// Error names the run, how it ended and why.
func (e *RunError) Error() string {
	if e.Status == StatusCancelled {
		return fmt.Sprintf("run %s was cancelled: %s", e.RunID, e.Message)
	}
	return fmt.Sprintf("run %s failed after %d attempt(s): %s", e.RunID, e.Attempts, e.Message)
}

// Is makes errors.Is(err, ErrRunFailed) hold for a failed run, and
// errors.Is(err, task.ErrRunCancelled) for a cancelled one, with
// errors.Is(err, task.ErrConcurrencyCancelled) when its concurrency group
// cancelled it (Group says which).
func (e *RunError) Is(target error) bool {
	if e.Status != StatusCancelled {
		return target == ErrRunFailed
	}
	if target == task.ErrConcurrencyCancelled {
		return e.Group != ""
	}
	return target == task.ErrRunCancelled
}

// StateError says a key or a run was not in the state an action needs;
// nothing was changed. Kind says which, and errors.Is matches it:
//
//   - ErrKeyNotHeld: no run holds Key, or the run RunID that a signal
//     named is gone (errors.Is(err, ErrRunNotFound) holds then too).
//   - ErrKeyOwnerChanged: Inspector.ReleaseKey found Key held by Current
//     ("" when nobody holds it now), not by Expected.
//   - ErrOwnerFinished: the run RunID (the holder of Key, for a signal by
//     key) has ended with Status and cannot be signalled.
//   - ErrNotRetryable: Inspector.RetryRun refused run RunID, in Status;
//     RetriedBy is the run that retried it already ("" when none did).
//   - ErrNotScheduled: Inspector.Reschedule found run RunID no longer
//     waiting for its scheduled time: State is "queued" (due already),
//     "retrying", "debouncing", "running" or the status it ended with.
type StateError struct {
	Kind      error
	Key       string
	RunID     string
	Status    Status
	State     string
	Expected  string
	Current   string
	RetriedBy string
}

// Error says what state the key or the run was in, as its Kind reads.
func (e *StateError) Error() string {
	switch {
	case errors.Is(e.Kind, ErrKeyNotHeld):
		if e.RunID != "" {
			return fmt.Sprintf("run %s not found", e.RunID)
		}
		return fmt.Sprintf("no run holds idempotency key %q", e.Key)
	case errors.Is(e.Kind, ErrKeyOwnerChanged):
		if e.Current == "" {
			return fmt.Sprintf("idempotency key %q is no longer held (expected run %s)", e.Key, e.Expected)
		}
		return fmt.Sprintf("idempotency key %q is held by run %s, not %s", e.Key, e.Current, e.Expected)
	case errors.Is(e.Kind, ErrOwnerFinished):
		if e.Key != "" {
			return fmt.Sprintf("idempotency key %q is held by run %s, which has %s and cannot be signalled", e.Key, e.RunID, e.Status)
		}
		return fmt.Sprintf("run %s has %s and cannot be signalled", e.RunID, e.Status)
	case errors.Is(e.Kind, ErrNotRetryable):
		switch {
		case e.RetriedBy != "":
			return fmt.Sprintf("run %s was already retried by run %s; retry that run instead", e.RunID, e.RetriedBy)
		case e.Status.Terminal():
			return fmt.Sprintf("run %s %s: only a failed or cancelled run can be retried", e.RunID, e.Status)
		}
		return fmt.Sprintf("run %s is %s: only a failed or cancelled run can be retried; cancel it first", e.RunID, e.Status)
	case errors.Is(e.Kind, ErrNotScheduled):
		return fmt.Sprintf("run %s is not waiting for a scheduled time: it is %s", e.RunID, e.State)
	}
	return fmt.Sprintf("%v: key %q run %s", e.Kind, e.Key, e.RunID)
}

// Is reports whether target is e's Kind, or ErrRunNotFound for a signal
// to a run that is gone.
func (e *StateError) Is(target error) bool {
	return target == e.Kind || (e.Kind == ErrKeyNotHeld && e.RunID != "" && target == ErrRunNotFound)
}
