package client

import (
	"context"
	"time"
)

// TaskPause is a task's paused state after SetTaskPaused.
type TaskPause struct {
	Task string `json:"task"`
	// Paused says workers start none of the task's runs (triggers are
	// accepted all the same; the runs wait, queued).
	Paused bool `json:"paused"`
	// PausedAt is when the task was paused (zero when it is not).
	PausedAt time.Time `json:"pausedAt,omitzero"`
	// Changed is false when the task was in that state already.
	Changed bool `json:"changed"`
}

// SetTaskPaused pauses a task (paused true) or resumes it (false), within
// the workers' PauseRefresh (worker.PauseRefreshDefault) of the call.
//
// A paused task's runs are started by no worker until it is resumed: runs
// already running finish; triggers are still accepted, and their runs
// wait, queued. Pausing a paused task changes nothing (it keeps the time
// it was first paused), nor does resuming a task that is not paused
// (TaskPause.Changed says which). Pausing an unregistered task is an
// error matching ErrTaskNotFound, and so is resuming one, unless it is
// paused (a registration lost with Redis's data can still be resumed).
func (in *Inspector) SetTaskPaused(ctx context.Context, name string, paused bool) (TaskPause, error) {
	if !paused {
		return in.resumeTask(ctx, name)
	}
	if _, err := in.GetTask(ctx, name); err != nil {
		return TaskPause{}, err
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	changed, err := in.c.store.PauseTask(ctx, name, in.c.opts.Clock.Now())
	if err != nil {
		return TaskPause{}, in.c.unavailable(ctx, err)
	}
	all, err := in.c.store.PausedTasks(ctx)
	if err != nil {
		return TaskPause{}, in.c.unavailable(ctx, err)
	}
	at, ok := all[name]
	if !ok {
		// Resumed between the two calls.
		return TaskPause{Task: name, Changed: changed}, nil
	}
	return TaskPause{Task: name, Paused: true, PausedAt: at.UTC(), Changed: changed}, nil
}

// resumeTask is SetTaskPaused(false).
func (in *Inspector) resumeTask(ctx context.Context, name string) (TaskPause, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	changed, err := in.c.store.ResumeTask(ctx, name)
	if err != nil {
		return TaskPause{}, in.c.unavailable(ctx, err)
	}
	if !changed {
		if _, err := in.GetTask(ctx, name); err != nil {
			return TaskPause{}, err
		}
	}
	return TaskPause{Task: name, Changed: changed}, nil
}

// PausedTasks returns the namespace's paused tasks, each with when it was
// paused.
func (in *Inspector) PausedTasks(ctx context.Context) (map[string]time.Time, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	m, err := in.c.store.PausedTasks(ctx)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	for k, v := range m {
		m[k] = v.UTC()
	}
	return m, nil
}
