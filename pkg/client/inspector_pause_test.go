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

// SetTaskPaused pauses a registered task once (a second pause keeps the
// first time) and resumes it; an unregistered task is ErrTaskNotFound,
// unless it is paused (a registration lost with Redis's data can still be
// resumed).
func TestInspectorPauseAndResumeTask(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		registerDef(t, c, task.Must[map[string]any, struct{}]("pause-me", task.Options{}).Definition())
		p, err := in.SetTaskPaused(ctx, "pause-me", true)
		if err != nil || !p.Paused || !p.Changed || p.PausedAt.IsZero() {
			t.Fatalf("pause = %+v, %v", p, err)
		}
		again, err := in.SetTaskPaused(ctx, "pause-me", true)
		if err != nil || again.Changed || !again.PausedAt.Equal(p.PausedAt) {
			t.Fatalf("second pause = %+v, %v; want unchanged, paused at %v", again, err, p.PausedAt)
		}
		if m, err := in.PausedTasks(ctx); err != nil || len(m) != 1 || !m["pause-me"].Equal(p.PausedAt) {
			t.Fatalf("paused = %v, %v", m, err)
		}
		if r, err := in.SetTaskPaused(ctx, "pause-me", false); err != nil || r.Paused || !r.Changed {
			t.Fatalf("resume = %+v, %v", r, err)
		}
		for _, pause := range []bool{true, false} {
			if _, err := in.SetTaskPaused(ctx, "nobody-registered-me", pause); !errors.Is(err, client.ErrTaskNotFound) {
				t.Errorf("unregistered task, paused %v: %v, want ErrTaskNotFound", pause, err)
			}
		}
		if _, err := clientlink.Store(c).PauseTask(ctx, "lost-registration", time.Now()); err != nil {
			t.Fatal(err)
		}
		if r, err := in.SetTaskPaused(ctx, "lost-registration", false); err != nil || !r.Changed {
			t.Fatalf("resume of a paused task without registration = %+v, %v", r, err)
		}
	})
}
