package worker_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The worker's /metrics reports the queue depth of its own tasks, summed
// over the partitions: the runs triggered before it started, then none
// once it has taken them.
func TestWorkerMetricsQueueDepth(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deep", task.Options{})
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet,
			LeaseDuration: 2 * time.Second, FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return out{ID: x.ID}, nil
		})
		hs := httptest.NewServer(w.Handler())
		defer hs.Close()
		const name = `taskq_worker_queue_depth{task="deep"}`
		const n = 5
		var refs []*client.RunRef[out]
		for i := range n {
			ref, err := client.RunNoWait(ctx, c, tk, in{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, ref)
		}
		if _, body := get(t, hs.URL+"/metrics"); metric(body, name) != n {
			t.Fatalf("queue depth before Start = %v, want %d:\n%s", metric(body, name), n, body)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = w.Shutdown(ctx) }()
		eventually(t, "the queued runs taken", func() bool {
			_, body := get(t, hs.URL+"/metrics")
			return metric(body, name) == 0 && metric(body, `taskq_worker_runs_in_flight{task="deep"}`) == n
		})
		close(release)
		for _, ref := range refs {
			wait(t, ref)
		}
		if _, body := get(t, hs.URL+"/metrics"); metric(body, name) != 0 {
			t.Fatalf("queue depth once the runs ended = %v", metric(body, name))
		}
	})
}
