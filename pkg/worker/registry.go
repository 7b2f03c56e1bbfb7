package worker

import (
	"errors"
	"fmt"
)

// definitionConflict says what Start does when another worker registered a
// different definition under the same task name.
type definitionConflict int

const (
	// definitionReplace registers this worker's definition and logs a
	// warning naming both versions.
	definitionReplace definitionConflict = iota
	// definitionRefuse makes Start fail with a *DefinitionConflictError.
	definitionRefuse
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

// Error names the task and the two definitions' hashes.
func (e *DefinitionConflictError) Error() string {
	return fmt.Sprintf("task %q: registered definition %s (by %s) differs from this worker's %s",
		e.Task, e.RegisteredHash, e.RegisteredBy, e.LocalHash)
}

// Is makes errors.Is(err, ErrDefinitionConflict) hold.
func (e *DefinitionConflictError) Is(target error) bool { return target == ErrDefinitionConflict }

// conflictOf is what Options.RefuseDefinitionConflict asks for.
func conflictOf(refuse bool) definitionConflict {
	if refuse {
		return definitionRefuse
	}
	return definitionReplace
}
