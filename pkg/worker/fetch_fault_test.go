package worker_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Runs queued on several task streams before a worker starts (as after an
// outage): one read of the streams can bring more deliveries than the
// worker has free slots, since XREADGROUP's COUNT applies to each stream.
// The worker must still run no more than Concurrency handlers at once, and
// keep fetching until every run is done.
func TestBacklogOnManyStreamsRespectsConcurrency(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		const perTask = 6
		tasks := make([]*task.Task[in, out], 4)
		var refs []*client.RunRef[out]
		for i := range tasks {
			tasks[i] = task.Must[in, out](fmt.Sprintf("backlog-%d", i), task.Options{})
			for j := 0; j < perTask; j++ {
				ref, err := client.RunNoWait(ctx, c, tasks[i], in{ID: fmt.Sprintf("%d-%d", i, j)})
				if err != nil {
					t.Fatal(err)
				}
				refs = append(refs, ref)
			}
		}
		var running, most atomic.Int32
		startWorker(t, b, worker.Options{Concurrency: 2}, func(w *worker.Worker) {
			for _, tk := range tasks {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					n := running.Add(1)
					defer running.Add(-1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(20 * time.Millisecond)
					return out{ID: x.ID}, nil
				})
			}
		})
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for _, ref := range refs {
			if _, err := ref.Result(wctx); err != nil {
				t.Fatalf("run %s: %v (the worker stopped fetching)", ref.ID(), err)
			}
		}
		if m := most.Load(); m > 2 {
			t.Fatalf("%d handlers ran at once with Concurrency 2", m)
		}
	})
}
