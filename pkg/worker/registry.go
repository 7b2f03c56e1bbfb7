package worker

import (
	"errors"
	"fmt"
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
