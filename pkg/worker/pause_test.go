package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// pausedGauge reads taskq_worker_task_paused for task from reg (-1 when
// it is not there yet).
func pausedGauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "taskq_worker_task_paused" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "task" && l.GetValue() == name {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return -1
}

// A paused task: its running run finishes; its triggers are accepted and
// their runs stay queued, not started, while another task's runs start
// and end; once resumed, its runs start and succeed. A worker started
// while the task is paused starts none of its runs either.
func TestPausedTaskStartsNoRunsUntilResumed(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		paused := task.Must[in, out]("pause-a", task.Options{})
		other := task.Must[in, out]("pause-b", task.Options{})
		var rec starts
		release := make(chan struct{})
		reg := prometheus.NewRegistry()
		register := func(w *worker.Worker) {
			if err := worker.Handle(w, paused, func(ctx worker.Context, x in) (out, error) {
				rec.record(ctx.RunID())
				if x.Mode == "slow" {
					<-release
				}
				return out{ID: x.ID}, nil
			}); err != nil {
				t.Fatal(err)
			}
			if err := worker.Handle(w, other, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil }); err != nil {
				t.Fatal(err)
			}
		}
		// A long FetchBlock: a read under way when the pause is learned
		// brings deliveries of the paused task, which must go back.
		startWorker(t, b, worker.Options{Concurrency: 4, FetchBlock: 2 * time.Second, PauseRefresh: 50 * time.Millisecond,
			Metrics: reg}, register)
		c := newClient(t, b)
		insp := c.Inspector()

		slow, err := client.RunNoWait(ctx, c, paused, in{ID: "slow", Mode: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the slow run's start", func() bool { _, ok := rec.of(slow.ID()); return ok })
		p, err := insp.SetTaskPaused(ctx, "pause-a", true)
		if err != nil || !p.Paused || !p.Changed {
			t.Fatalf("pause = %+v, %v", p, err)
		}
		eventually(t, "the worker to read the pause", func() bool { return pausedGauge(t, reg, "pause-a") == 1 })
		if g := pausedGauge(t, reg, "pause-b"); g != 0 {
			t.Fatalf("gauge of the other task = %v, want 0", g)
		}
		close(release)
		if info := wait(t, slow); info.Status != client.StatusSucceeded {
			t.Fatalf("the run running when paused = %+v, want succeeded", info)
		}

		var held []*client.RunRef[out]
		for i := range 5 {
			ref, err := client.RunNoWait(ctx, c, paused, in{ID: fmt.Sprint("a", i)})
			if err != nil {
				t.Fatalf("trigger while paused: %v", err)
			}
			held = append(held, ref)
		}
		for i := range 3 {
			ref, err := client.RunNoWait(ctx, c, other, in{ID: fmt.Sprint("b", i)})
			if err != nil {
				t.Fatal(err)
			}
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("other task's run %d = %+v", i, info)
			}
		}
		// A second worker started while the task is paused.
		startWorker(t, b, worker.Options{Concurrency: 4, PauseRefresh: 50 * time.Millisecond}, register)
		for i := range 3 {
			ref, err := client.RunNoWait(ctx, c, other, in{ID: fmt.Sprint("c", i)})
			if err != nil {
				t.Fatal(err)
			}
			wait(t, ref)
		}
		for _, ref := range held {
			if _, ok := rec.of(ref.ID()); ok {
				t.Errorf("run %s of the paused task started", ref.ID())
			}
			info, err := c.Inspector().GetRun(ctx, ref.ID())
			if err != nil {
				t.Fatal(err)
			}
			if info.Status != client.StatusQueued || info.Attempt != 0 {
				t.Errorf("run of the paused task = %+v; want queued, no attempt", info)
			}
		}

		r, err := insp.SetTaskPaused(ctx, "pause-a", false)
		if err != nil || r.Paused || !r.Changed {
			t.Fatalf("resume = %+v, %v", r, err)
		}
		for _, ref := range held {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Errorf("run after resume = %+v, want succeeded", info)
			}
		}
		if g := pausedGauge(t, reg, "pause-a"); g != 0 {
			t.Errorf("gauge after resume = %v, want 0", g)
		}
	})
}
