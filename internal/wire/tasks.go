package wire

import (
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// Task is a registered task and whether it is paused: an item of GET
// /api/v1/tasks and what taskq tasks ls and get print with -o json.
type Task struct {
	task.Registered
	// Paused says workers start none of the task's runs (see
	// client.Inspector.SetTaskPaused); PausedAt is when it was paused.
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"pausedAt,omitempty"`
}

// TaskOf is r with its state, from the paused tasks as
// client.Inspector.PausedTasks returns them; times in UTC.
func TaskOf(r task.Registered, paused map[string]time.Time) Task {
	r.RegisteredAt = r.RegisteredAt.UTC()
	t := Task{Registered: r}
	if at, ok := paused[r.Spec.Name]; ok {
		at = at.UTC()
		t.Paused, t.PausedAt = true, &at
	}
	return t
}
