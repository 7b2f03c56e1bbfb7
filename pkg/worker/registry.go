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
		spec := w.tasks[n].def.Spec()
		rec := task.Registered{Spec: spec, Hash: spec.Hash(), Worker: w.opts.Name, RegisteredAt: w.opts.Clock.Now().UTC()}
		raw, err := json.Marshal(rec)
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
