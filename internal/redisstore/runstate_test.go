package redisstore_test

import (
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// RunStates reads each run's status and error, and an empty status for a
// run that does not exist.
func TestRunStates(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		queued, cancelled := f.params("rs", "", engine.StrategyNone), f.params("rs", "", engine.StrategyNone)
		f.enqueue(queued)
		f.enqueue(cancelled)
		if _, err := f.s.Cancel(f.ctx, cancelled.RunID, "superseded by run x", time.Now()); err != nil {
			t.Fatal(err)
		}
		st, err := f.s.RunStates(f.ctx, []string{queued.RunID, cancelled.RunID, "no-such-run"})
		if err != nil {
			t.Fatal(err)
		}
		if st[0].Status != "queued" || st[1].Status != "cancelled" || st[1].Error != "superseded by run x" || st[2].Status != "" {
			t.Fatalf("states = %+v", st)
		}
	})
}

// MissingTasks names the tasks without a registration.
func TestMissingTasks(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		if _, err := f.s.RegisterTask(f.ctx, "here", []byte(`{}`), false); err != nil {
			t.Fatal(err)
		}
		missing, err := f.s.MissingTasks(f.ctx, []string{"gone", "here", "also-gone"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(missing, []string{"gone", "also-gone"}) {
			t.Fatalf("missing = %v, want [gone also-gone]", missing)
		}
	})
}
