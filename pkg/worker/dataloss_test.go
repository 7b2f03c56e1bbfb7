package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Redis restarts without persistence, so it comes back empty: no task
// registry, no streams, no consumer groups. The worker and the client keep
// running. Within a few seconds the worker has registered its tasks again
// (it notices on its next read of the streams, which fails with NOGROUP),
// so a trigger by task name, as the HTTP API and event ingestion make,
// is accepted again, and runs queued after the restart complete. Before,
// the worker created its consumer groups again but registered its tasks
// only at Start: every trigger by name failed with ErrTaskNotFound until
// the worker was restarted. The namespace's partition count is recorded
// again too, so that a process opening it afterwards adopts the count the
// running ones use.
func TestWorkerRegistersAgainAfterRedisLosesItsData(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "--appendonly", "no")
	ns := redistest.Namespace(t)
	ctx := context.Background()
	c, err := client.New(client.Options{RedisURL: srv.URL(), Namespace: ns, Partitions: 2, Logger: quiet, OperationTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[in, out]("after-loss", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	w, err := worker.New(worker.Options{RedisURL: srv.URL(), Namespace: ns, Partitions: 2, Logger: quiet, FetchBlock: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil }); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Shutdown(ctx)

	byName := func(id string) (*client.RunHandle, error) {
		def, err := c.Definition(ctx, tk.Name())
		if err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(in{ID: id})
		return c.TriggerJSON(ctx, def, raw)
	}
	result := func(h *client.RunHandle) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		info, err := h.Wait(wctx)
		if err != nil || info.Status != client.StatusSucceeded {
			t.Fatalf("run %s: %+v, %v; want succeeded", h.ID(), info, err)
		}
	}
	h, err := byName("before")
	if err != nil {
		t.Fatal(err)
	}
	result(h)

	srv.Restart()
	restarted := time.Now()
	var lastErr error
	for h = nil; h == nil && time.Since(restarted) < 5*time.Second; time.Sleep(50 * time.Millisecond) {
		h, lastErr = byName("after")
	}
	if h == nil {
		t.Fatalf("no trigger by name accepted within 5s of Redis losing its data: %v", lastErr)
	}
	t.Logf("triggers by name accepted again %s after the restart", time.Since(restarted).Round(time.Millisecond))
	result(h)
	ref, err := client.RunNoWait(ctx, c, tk, in{ID: "typed-after"})
	if err != nil {
		t.Fatal(err)
	}
	result(ref.RunHandle)
	// Read, not opened: opening a namespace without a record records one.
	meta := redispeek.Store(clientlink.Store(c)).Keys().Meta()
	eventually(t, "the partition count to be recorded again", func() bool {
		return redispeek.Store(clientlink.Store(c)).Redis().HGet(ctx, meta, "partitions").Val() == "2"
	})
	later, err := client.New(client.Options{RedisURL: srv.URL(), Namespace: ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer later.Close()
	if n, err := clientlink.Store(later).PartitionCount(ctx); err != nil || n != 2 {
		t.Fatalf("a client opened after the loss has %d partitions, %v; want the 2 in use", n, err)
	}
}

// A registry entry that disappeared while the streams stayed (deleted,
// or evicted under a maxmemory policy that evicts any key) is put back
// within a heartbeat interval, without waiting for a read of the streams
// to fail.
func TestWorkerRegistersAgainWhenTheRegistryIsGone(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("registry-gone", task.Options{})
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
		})
		if _, err := c.Inspector().GetTask(ctx, tk.Name()); err != nil {
			t.Fatal(err)
		}
		if err := b.Client.Del(ctx, redispeek.Store(clientlink.Store(c)).Keys().Tasks()).Err(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the task to be registered again", func() bool {
			_, err := c.Inspector().GetTask(ctx, tk.Name())
			return err == nil
		})
	})
}
