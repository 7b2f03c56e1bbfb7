package redisstore_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// A pause is kept per task and namespace, keeps the time it was first
// made, and a resume removes it; another namespace sees none of it.
func TestPauseAndResumeTask(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		at := time.UnixMilli(f.now.UnixMilli())
		if was, err := f.s.PauseTask(f.ctx, "emails", at); err != nil || !was {
			t.Fatalf("pause = %v, %v; want true", was, err)
		}
		if was, err := f.s.PauseTask(f.ctx, "emails", at.Add(time.Minute)); err != nil || was {
			t.Fatalf("second pause = %v, %v; want false", was, err)
		}
		if _, err := f.s.PauseTask(f.ctx, "reports", at); err != nil {
			t.Fatal(err)
		}
		m, err := f.s.PausedTasks(f.ctx)
		if err != nil || len(m) != 2 || !m["emails"].Equal(at) || !m["reports"].Equal(at) {
			t.Fatalf("paused = %v, %v", m, err)
		}
		other := redisstore.NewPartitioned(b.Client, b.Namespace+"-other", 1)
		if m, err := other.PausedTasks(f.ctx); err != nil || len(m) != 0 {
			t.Fatalf("another namespace's paused = %v, %v", m, err)
		}
		if was, err := f.s.ResumeTask(f.ctx, "emails"); err != nil || !was {
			t.Fatalf("resume = %v, %v; want true", was, err)
		}
		if was, err := f.s.ResumeTask(f.ctx, "emails"); err != nil || was {
			t.Fatalf("second resume = %v, %v; want false", was, err)
		}
		if m, err := f.s.PausedTasks(f.ctx); err != nil || len(m) != 1 || m["emails"] != (time.Time{}) {
			t.Fatalf("after resume = %v, %v", m, err)
		}
	})
}
