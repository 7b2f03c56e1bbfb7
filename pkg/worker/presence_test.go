package worker_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

func listWorkers(t *testing.T, c *client.Client) engine.WorkersView {
	t.Helper()
	v, err := clientlink.Store(c).ListWorkers(context.Background(), engine.ListWorkersParams{DefaultLease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A started worker is listed with what it is and the run it holds, and a
// graceful shutdown takes it off the list.
func TestWorkerIsListedWhileItRuns(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("presence", task.Options{})
		started, release := make(chan string, 1), make(chan struct{})
		before := time.Now().Truncate(time.Millisecond)
		w := startWorker(t, b, worker.Options{Name: "w-presence", Version: "v9.9.9", Concurrency: 3},
			func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					started <- ctx.RunID()
					<-release
					return out{ID: x.ID}, nil
				})
			})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if id := <-started; id != ref.ID() {
			t.Fatalf("handler got run %s, want %s", id, ref.ID())
		}
		v := listWorkers(t, c)
		if len(v.Workers) != 1 {
			t.Fatalf("workers = %+v, want one", v.Workers)
		}
		got := v.Workers[0]
		host, _ := os.Hostname()
		if got.Name != "w-presence" || got.Version != "v9.9.9" || got.Concurrency != 3 || got.Host != host ||
			got.PID != os.Getpid() || !slices.Equal(got.Tasks, []string{"presence"}) || got.Dead ||
			got.HeartbeatInterval != (2*time.Second/3).Truncate(time.Millisecond) || got.LeaseDuration != 2*time.Second ||
			got.Started.Before(before) || got.LastHeartbeat.Before(before) {
			t.Errorf("listed %+v", got)
		}
		if len(got.Runs) != 1 || got.Runs[0].RunID != ref.ID() || got.Runs[0].Lapsed {
			t.Errorf("runs = %+v, want %s held", got.Runs, ref.ID())
		}
		close(release)
		if info := wait(t, ref); info.Status != client.StatusSucceeded {
			t.Fatalf("status = %s", info.Status)
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if v := listWorkers(t, c); len(v.Workers) != 0 {
			t.Fatalf("workers after shutdown = %+v, want none", v.Workers)
		}
	})
}

// A worker process SIGKILLed mid-run stops beating: it is listed as dead
// and its run as lapsed, awaiting redelivery, though the run's record
// still says running.
func TestKilledWorkerIsListedDeadWithItsRunLapsed(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		helper := startHelperWorker(t, "hang", b)
		ref, err := client.RunNoWait(ctx, c, crashTask, in{ID: "crash-presence"})
		if err != nil {
			t.Fatal(err)
		}
		helper.Next() // started
		eventually(t, "the run begun", func() bool { st, _ := runStatus(ctx, ref); return st == client.StatusRunning })
		v := listWorkers(t, c)
		if len(v.Workers) != 1 || v.Workers[0].PID != helper.cmd.Process.Pid || v.Workers[0].Dead ||
			len(v.Workers[0].Runs) != 1 || v.Workers[0].Runs[0].RunID != ref.ID() || v.Workers[0].Runs[0].Lapsed {
			t.Fatalf("before the kill: %+v, want the helper live holding %s", v.Workers, ref.ID())
		}
		helper.Kill()
		eventually(t, "the killed worker listed dead, its run lapsed", func() bool {
			v = listWorkers(t, c)
			return len(v.Workers) == 1 && v.Workers[0].Dead && len(v.Lapsed) == 1 && v.Lapsed[0].RunID == ref.ID()
		})
		if !v.Workers[0].Runs[0].Lapsed {
			t.Errorf("the dead worker's run is not marked lapsed: %+v", v.Workers[0].Runs)
		}
		if st, _ := runStatus(ctx, ref); st != client.StatusRunning {
			t.Errorf("record status = %s; the record still says running until redelivery", st)
		}
	})
}
