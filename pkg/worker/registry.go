package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskq/taskq/pkg/task"
)

// DefinitionConflict says what Start does when another worker registered a
// different definition under the same task name.
type DefinitionConflict int

const (
	// DefinitionReplace registers this worker's definition and logs a
	// warning naming both versions: the usual case in a rolling deploy.
	DefinitionReplace DefinitionConflict = iota
	// DefinitionRefuse makes Start fail with a *DefinitionConflictError
	// and leaves the registered definition as it is.
	DefinitionRefuse
)

// ErrDefinitionConflict matches every *DefinitionConflictError.
var ErrDefinitionConflict = errors.New("task definition conflict")

// DefinitionConflictError says two workers disagree about a task.
type DefinitionConflictError struct {
	Task           string
	RegisteredHash string
	RegisteredBy   string
	LocalHash      string
}

func (e *DefinitionConflictError) Error() string {
	return fmt.Sprintf("task %q: registered definition %s (by %s) differs from this worker's %s",
		e.Task, e.RegisteredHash, e.RegisteredBy, e.LocalHash)
}

// Is makes errors.Is(err, ErrDefinitionConflict) hold.
func (e *DefinitionConflictError) Is(target error) bool { return target == ErrDefinitionConflict }

// registerDefinitions publishes this worker's task definitions so that
// event ingestion, the HTTP API and the CLI use the same expressions.
func (w *Worker) registerDefinitions(ctx context.Context) error {
	for _, n := range w.names {
		rec, raw, err := w.registration(n)
		if err != nil {
			return err
		}
		replace := w.opts.DefinitionConflict == DefinitionReplace
		prevRaw, err := w.store.RegisterTask(ctx, n, raw, replace)
		if err != nil {
			return fmt.Errorf("worker: register task %q: %w", n, err)
		}
		if prevRaw == nil {
			continue
		}
		var prev task.Registered
		if err := json.Unmarshal(prevRaw, &prev); err != nil || prev.Hash == rec.Hash {
			continue
		}
		conflict := &DefinitionConflictError{Task: n, RegisteredHash: prev.Hash, RegisteredBy: prev.Worker, LocalHash: rec.Hash}
		if !replace {
			return conflict
		}
		w.log.Warn("taskq: replaced a different registered definition of the task; workers running the old one still use it",
			"task", n, "previous_hash", prev.Hash, "previous_worker", prev.Worker, "hash", rec.Hash)
	}
	return nil
}

// registration is the registry entry of task n, and its JSON.
func (w *Worker) registration(n string) (task.Registered, []byte, error) {
	spec := w.tasks[n].def.Spec()
	rec := task.Registered{Spec: spec, Hash: spec.Hash(), Worker: w.opts.Name, RegisteredAt: w.opts.Clock.Now().UTC()}
	raw, err := json.Marshal(rec)
	return rec, raw, err
}

// restore puts back what Redis lost of this worker's set-up, as after a
// restart without persistence or a flush: each task's consumer group and
// each missing registration. A registration present is left as it is,
// whoever made it, so workers of two versions in a rolling deploy do not
// overwrite each other; only an entry that is gone is written again.
func (w *Worker) restore(ctx context.Context) error {
	for _, n := range w.names {
		if err := w.store.EnsureGroup(ctx, n); err != nil {
			return fmt.Errorf("create consumer group for %q: %w", n, err)
		}
	}
	return w.registerMissing(ctx)
}

// registerMissing registers again the tasks the registry has lost.
func (w *Worker) registerMissing(ctx context.Context) error {
	missing, err := w.store.MissingTasks(ctx, w.names)
	if err != nil {
		return fmt.Errorf("read task registry: %w", err)
	}
	for _, n := range missing {
		_, raw, err := w.registration(n)
		if err != nil {
			return err
		}
		prev, err := w.store.RegisterTask(ctx, n, raw, false)
		if err != nil {
			return fmt.Errorf("register task %q: %w", n, err)
		}
		if prev == nil {
			w.log.Warn("taskq: task was missing from the registry (did Redis lose its data?); registered it again", "task", n)
		}
	}
	return nil
}

// keepRegistered checks every HeartbeatInterval that the registry still
// holds this worker's tasks, and registers again those it lost. A read of
// the streams that fails with NOGROUP restores at once (see fetch); this
// catches a registry lost while the streams stayed, or while no read was
// made (every handler slot busy).
func (w *Worker) keepRegistered(quit <-chan struct{}) {
	for sleep(quit, w.opts.HeartbeatInterval) {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.OperationTimeout)
		if err := w.registerMissing(ctx); err != nil {
			w.log.Warn("taskq: checking the task registry failed", "err", err)
		}
		cancel()
	}
}
