package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// scheduleClient is a client whose namespace has several partitions (16
// on the cluster, several per master), so that scheduled runs live in
// partitions other than the home one.
func scheduleClient(t *testing.T, b *redistest.Backend) *client.Client {
	t.Helper()
	parts := 4
	if b.IsCluster() {
		parts = 16
	}
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: parts, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func scheduledTask(name string) *task.Task[in, out] {
	return task.Must[in, out](name, task.Options{Idempotency: task.Status(`"`+name+`:" + input.id`, time.Minute)})
}

// A scheduled run is started by a worker once it is due and not before;
// its key is held throughout and released when it ends.
func TestScheduledRunStartsWhenDue(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := scheduleClient(t, b)
		tk := scheduledTask("sched-due")
		var seen starts
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				seen.record(ctx.RunID())
				return out{ID: x.ID}, nil
			})
		})
		due := time.Now().Add(700 * time.Millisecond)
		refs := make([]*client.RunRef[out], 3)
		for i := range refs {
			var err error
			if refs[i], err = client.RunNoWait(ctx, c, tk, in{ID: string(rune('a' + i))}, client.RunAt(due)); err != nil {
				t.Fatal(err)
			}
		}
		for _, ref := range refs {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("run %s ended %s", ref.ID(), info.Status)
			}
			started, ok := seen.of(ref.ID())
			if !ok || started.Before(due.Truncate(time.Millisecond)) {
				t.Fatalf("run %s started at %v, before its due time %v", ref.ID(), started, due)
			}
		}
		// The key was held until the run ended: free now.
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: "a"}); err != nil {
			t.Fatalf("trigger after the scheduled run ended: %v", err)
		}
	})
}

// Nothing of a scheduled run lives in a worker: one triggered while no
// worker runs, or held by a worker that stops, is run by the next worker
// once due.
func TestScheduledRunSurvivesAWorkerRestart(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := scheduleClient(t, b)
		in0 := c.Inspector()
		tk := scheduledTask("sched-restart")
		handler := func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
		}
		before, err := client.RunNoWait(ctx, c, tk, in{ID: "before"}, client.RunIn(300*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		far, err := client.RunNoWait(ctx, c, tk, in{ID: "far"}, client.RunIn(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		first := startWorker(t, b, worker.Options{}, handler)
		if info := wait(t, before); info.Status != client.StatusSucceeded {
			t.Fatalf("run triggered before any worker: %s", info.Status)
		}
		if err := first.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if info, err := in0.GetRun(ctx, far.ID()); err != nil || !info.Scheduled {
			t.Fatalf("the run an hour ahead after the worker stopped = %+v, %v; want still scheduled", info, err)
		}
		startWorker(t, b, worker.Options{}, handler)
		// Brought forward to now: the new worker runs it.
		if _, err := in0.Reschedule(ctx, far.ID(), time.Now()); err != nil {
			t.Fatal(err)
		}
		if info := wait(t, far); info.Status != client.StatusSucceeded {
			t.Fatalf("the rescheduled run: %s", info.Status)
		}
	})
}

// A scheduled run cancelled before it is due never starts, and its key is
// free at once; one moved later does not start at its first time.
func TestCancelledOrPostponedScheduledRunDoesNotStart(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := scheduleClient(t, b)
		in0 := c.Inspector()
		tk := scheduledTask("sched-cancel")
		var seen starts
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				seen.record(ctx.RunID())
				return out{ID: x.ID}, nil
			})
		})
		due := time.Now().Add(2 * time.Second)
		trigger := func(id string) *client.RunRef[out] {
			ref, err := client.RunNoWait(ctx, c, tk, in{ID: id}, client.RunAt(due))
			if err != nil {
				t.Fatal(err)
			}
			return ref
		}
		cancelled, postponed, witness := trigger("cancelled"), trigger("postponed"), trigger("witness")
		if _, err := c.Handle(cancelled.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := in0.Reschedule(ctx, postponed.ID(), time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		// The key of the cancelled run is free before its time.
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: "cancelled"}, client.RunIn(time.Hour)); err != nil {
			t.Fatalf("trigger of the cancelled run's key: %v", err)
		}
		// The witness, due when the other two were, has run: their time has
		// passed. Neither has started, and their records say neither will:
		// one ended, one waits an hour more.
		if info := wait(t, witness); info.Status != client.StatusSucceeded {
			t.Fatalf("witness: %s", info.Status)
		}
		if _, ok := seen.of(cancelled.ID()); ok {
			t.Fatal("the cancelled scheduled run started")
		}
		if _, ok := seen.of(postponed.ID()); ok {
			t.Fatal("the postponed run started at its first time")
		}
		if info, err := in0.GetRun(ctx, cancelled.ID()); err != nil || info.Status != client.StatusCancelled || info.Attempt != 0 {
			t.Fatalf("cancelled run = %+v, %v", info, err)
		}
		if info, err := in0.GetRun(ctx, postponed.ID()); err != nil || !info.Scheduled || info.Attempt != 0 {
			t.Fatalf("postponed run = %+v, %v; want still waiting", info, err)
		}
	})
}
