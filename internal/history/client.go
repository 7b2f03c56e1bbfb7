package history

import (
	"context"
	"errors"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// definite are the errors a trigger returns before it sends anything, or
// that Redis answers without writing: the trigger certainly created nothing.
var definite = []error{
	client.ErrInputTooLarge, task.ErrInvalidConfig, engine.ErrWrongType,
	idempotency.ErrNotString, idempotency.ErrEmptyKey, idempotency.ErrKeyTooLong,
	idempotency.ErrEval, idempotency.ErrCostLimit, idempotency.ErrInput,
}

// TriggerResult says what a trigger's caller was told: CodeOK with the run
// ID, CodeRefused with the owner a collision named, CodeError for an error
// that certainly created nothing, CodeUnknown for any other error (the
// request may have reached Redis).
func TriggerResult(runID string, err error) Result {
	if err == nil {
		return Result{Code: CodeOK, RunID: runID}
	}
	var col *client.IdempotencyCollisionError
	if errors.As(err, &col) {
		return Result{Code: CodeRefused, Owner: col.ExistingRunID}
	}
	for _, d := range definite {
		if errors.Is(err, d) {
			return Result{Code: CodeError, Err: err.Error()}
		}
	}
	return Result{Code: CodeUnknown, Err: err.Error()}
}

// Trigger records a client-level trigger around fn, which triggers a run
// and returns its ID. op names the task, key and token (the input's "op"
// field) of the trigger.
func (r *Recorder) Trigger(op Op, fn func() (string, error)) (string, error) {
	op.Kind = KindTrigger
	p := r.Call(op)
	id, err := fn()
	p.Return(TriggerResult(id, err))
	return id, err
}

// ReadRuns records the status of each run as Redis has it now ("" for a
// record that no longer exists).
func ReadRuns(ctx context.Context, rec *Recorder, st *redisstore.Store, ids []string) error {
	for _, id := range ids {
		p := rec.Call(Op{Kind: KindReadRun, RunID: id})
		s, err := st.RunStatus(ctx, id)
		switch {
		case errors.Is(err, engine.ErrRunNotFound):
			p.Return(Result{Code: CodeOK})
		case err != nil:
			p.Return(Result{Code: CodeUnknown, Err: err.Error()})
			return err
		default:
			p.Return(Result{Code: CodeOK, Status: s})
		}
	}
	return nil
}

// ReadKeys records the owner of each idempotency key as Redis has it now
// ("" for a free key).
func ReadKeys(ctx context.Context, rec *Recorder, st *redisstore.Store, keys []string) error {
	for _, k := range keys {
		p := rec.Call(Op{Kind: KindReadKey, Key: k})
		ks, ok, err := st.GetKey(ctx, k)
		if err != nil {
			p.Return(Result{Code: CodeUnknown, Err: err.Error()})
			return err
		}
		owner := ""
		if ok {
			owner = ks.Owner
		}
		p.Return(Result{Code: CodeOK, Owner: owner})
	}
	return nil
}
