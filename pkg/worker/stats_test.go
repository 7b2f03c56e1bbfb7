package worker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The run statistics are counted in the worker's and the client's memory
// and written when they flush: nothing before (the flush interval here is
// an hour), and every attempt and duplicate exactly once the worker has
// shut down and the client closed.
func TestRunStatsFlushedOnShutdownAndClose(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		trig, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, StatsInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer trig.Close()
		tk := task.Must[in, out]("charted", task.Options{Retries: 1, Backoff: task.Backoff{Initial: time.Millisecond, Factor: 1},
			Idempotency: task.TTL(`"charted:" + input.id`, time.Hour)})
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, StatsInterval: time.Hour,
			LeaseDuration: 2 * time.Second, FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			if x.Mode == "fail" {
				return out{}, errors.New("told to fail")
			}
			time.Sleep(30 * time.Millisecond)
			return out{ID: x.ID}, nil
		})
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Shutdown(ctx) }()
		var refs []*client.RunRef[out]
		for i, mode := range []string{"", "", "", "fail"} {
			ref, err := client.RunNoWait(ctx, trig, tk, in{ID: fmt.Sprint(i), Mode: mode})
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
		for _, id := range []string{"0", "3"} {
			var coll *client.IdempotencyCollisionError
			if _, err := client.RunNoWait(ctx, trig, tk, in{ID: id}); !errors.As(err, &coll) {
				t.Fatalf("duplicate %s: %v", id, err)
			}
		}
		for _, ref := range refs {
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := ref.Wait(wctx)
			cancel()
			if err != nil && !errors.Is(err, client.ErrRunFailed) {
				t.Fatalf("run %s: %v", ref.ID(), err)
			}
		}
		total := func() client.RunStatsPoint {
			st, err := c.Inspector().RunStats(ctx, tk.Name(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return st.Total
		}
		if got := total(); got.Started != 0 || got.Ended != 0 || got.Duplicates != 0 {
			t.Fatalf("before any flush: %+v, want nothing written", got)
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := trig.Close(); err != nil {
			t.Fatal(err)
		}
		got := total()
		if got.Started != 5 || got.Ended != 5 || got.Succeeded != 3 || got.Retried != 1 || got.Failed != 1 || got.Duplicates != 2 {
			t.Errorf("after the flushes: %+v, want 5 started and ended, 3 succeeded, 1 retried, 1 failed, 2 duplicates", got)
		}
		// The three that succeeded ran 30ms or more: the highest run times.
		if got.RunP99 < 25*time.Millisecond || got.WaitP99 <= 0 {
			t.Errorf("run time p99 %v, wait p99 %v: want the sleeps' 30ms and a wait", got.RunP99, got.WaitP99)
		}
	})
}
