package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// PauseTask pauses a registered task once (a second pause keeps the first
// time), ResumeTask resumes it; an unregistered task is ErrTaskNotFound,
// unless it is paused (a registration lost with Redis's data can still be
// resumed).
func TestInspectorPauseAndResumeTask(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		registerDef(t, c, task.Must[map[string]any, struct{}]("pause-me", task.Options{}).Definition())
		p, err := in.PauseTask(ctx, "pause-me")
		if err != nil || !p.Paused || !p.Changed || p.PausedAt.IsZero() {
			t.Fatalf("pause = %+v, %v", p, err)
		}
		again, err := in.PauseTask(ctx, "pause-me")
		if err != nil || again.Changed || !again.PausedAt.Equal(p.PausedAt) {
			t.Fatalf("second pause = %+v, %v; want unchanged, paused at %v", again, err, p.PausedAt)
		}
		if m, err := in.PausedTasks(ctx); err != nil || len(m) != 1 || !m["pause-me"].Equal(p.PausedAt) {
			t.Fatalf("paused = %v, %v", m, err)
		}
		if r, err := in.ResumeTask(ctx, "pause-me"); err != nil || r.Paused || !r.Changed {
			t.Fatalf("resume = %+v, %v", r, err)
		}
		for _, act := range []func(context.Context, string) (client.TaskPause, error){in.PauseTask, in.ResumeTask} {
			if _, err := act(ctx, "nobody-registered-me"); !errors.Is(err, client.ErrTaskNotFound) {
				t.Errorf("unregistered task: %v, want ErrTaskNotFound", err)
			}
		}
		if _, err := clientlink.Store(c).PauseTask(ctx, "lost-registration", time.Now()); err != nil {
			t.Fatal(err)
		}
		if r, err := in.ResumeTask(ctx, "lost-registration"); err != nil || !r.Changed {
			t.Fatalf("resume of a paused task without registration = %+v, %v", r, err)
		}
	})
}
