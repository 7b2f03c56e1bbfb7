package worker_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// newPartitionedClient is a client of b's namespace with partitions
// partitions.
func newPartitionedClient(t *testing.T, b *redistest.Backend, partitions int) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: partitions, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// keysIn returns n idempotency keys of each of the namespace's partitions.
func keysIn(ns string, partitions, n int) [][]string {
	out := make([][]string, partitions)
	for i := 0; ; i++ {
		k := fmt.Sprintf("order:%d", i)
		p := engine.KeyPartition(ns, k, partitions)
		if len(out[p]) < n {
			out[p] = append(out[p], k)
		}
		done := true
		for _, ks := range out {
			done = done && len(ks) == n
		}
		if done {
			return out
		}
	}
}

// Under a backlog in every partition, a worker starts the runs of each
// partition in turn: each partition's share of the runs started stays
// within 10% of an even share.
func TestWorkerServesEveryPartitionFairly(t *testing.T) {
	t.Parallel()
	const partitions, backlog, counted = 4, 100, 200
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, partitions)
		tk := task.Must[in, out]("fair", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
		// The backlog: as many runs in every partition, queued before any
		// worker reads, in one batch (one script call per partition).
		var inputs []in
		for _, ks := range keysIn(b.Namespace, partitions, backlog) {
			for _, k := range ks {
				inputs = append(inputs, in{ID: k})
			}
		}
		refs, err := client.RunMany(ctx, c, tk, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			if p, _ := engine.RunPartition(r.ID()); p != engine.KeyPartition(b.Namespace, r.TriggerInfo().IdempotencyKey, partitions) {
				t.Fatalf("run %s of key %s is not in its key's partition", r.ID(), r.TriggerInfo().IdempotencyKey)
			}
		}
		var (
			mu      sync.Mutex
			started []int
			enough  = make(chan struct{})
		)
		startWorker(t, b, worker.Options{Concurrency: 4}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				p, _ := engine.RunPartition(ctx.RunID())
				mu.Lock()
				if started = append(started, p); len(started) == counted {
					close(enough)
				}
				mu.Unlock()
				// Long beside a read, so that a reader whose node answers
				// a little late (a loaded machine) is back in the queue for
				// slots before its turn comes round.
				time.Sleep(20 * time.Millisecond)
				return out{ID: x.ID}, nil
			})
		})
		select {
		case <-enough:
		case <-time.After(30 * time.Second):
			t.Fatal("the worker did not start enough runs")
		}
		mu.Lock()
		defer mu.Unlock()
		share := make([]int, partitions)
		for _, p := range started[:counted] {
			share[p]++
		}
		even := counted / partitions
		for _, n := range share {
			if n < even*9/10 || n > even*11/10 {
				t.Fatalf("runs started per partition, of the first %d: %v; want each within 10%% of %d", counted, share, even)
			}
		}
		t.Logf("runs started per partition, of the first %d: %v", counted, share)
	})
}

// commandCounter counts the commands a client sends, alone or in
// pipelines (a script call counts once, whatever it calls inside).
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *commandCounter) add(cmds ...redis.Cmder) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cmd := range cmds {
		c.n[strings.ToLower(cmd.Name())]++
	}
}

func (c *commandCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	return n
}

func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.add(cmd); return next(ctx, cmd) }
}
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.add(cmds...); return next(ctx, cmds) }
}

// connectedClients reads INFO clients.
func connectedClients(t *testing.T, rdb *redis.Client) int {
	t.Helper()
	info, err := rdb.Info(context.Background(), "clients").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	t.Fatal("INFO clients without connected_clients")
	return 0
}

// An idle worker's commands and connections grow with its partitions as
// docs/scaling.md says: per partition, one blocking read per FetchBlock
// (on a connection of its own) and one promote call per forward interval;
// the other duties are many seconds apart. The commands are counted as the
// worker sends them, over a window, and bounded from above only: a slow
// machine sends fewer, never more. The server is the test's own, so that
// its connections are the worker's.
func TestIdleWorkerCommandsPerPartition(t *testing.T) {
	const idleDuties = 6
	t.Parallel()
	srv := redistest.StartServer(t)
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer admin.Close()
	const window = 2 * time.Second
	const fetchBlock = 500 * time.Millisecond
	tk := task.Must[in, out]("idle", task.Options{})
	rates := map[int]float64{}
	for _, partitions := range []int{1, 4} {
		counter := &commandCounter{n: map[string]int{}}
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		rdb.AddHook(counter)
		w, err := worker.New(worker.Options{Redis: rdb, Namespace: fmt.Sprintf("idle-%d", partitions), Partitions: partitions,
			FetchBlock: fetchBlock, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		worker.Handle(w, tk, func(worker.Context, in) (out, error) { return out{}, nil })
		if err := w.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(fetchBlock) // past the start's own calls
		counter.take()
		began := time.Now()
		time.Sleep(window)
		sent := counter.take()
		elapsed := time.Since(began)
		conns := connectedClients(t, admin) - 1 // not admin's
		_ = w.Shutdown(context.Background())
		_ = rdb.Close()
		total := 0
		for _, n := range sent {
			total += n
		}
		// Per partition: reads per FetchBlock, promote calls per 250ms; a
		// heartbeat's writes and a registry check (7) at most once more.
		perSecond := float64(partitions) * (float64(time.Second)/float64(fetchBlock) + 4)
		if bound := int(perSecond*elapsed.Seconds()*1.25) + 10; total > bound {
			t.Fatalf("P=%d: an idle worker sent %d commands in %s (%v); want at most %d", partitions, total, elapsed.Round(time.Millisecond), sent, bound)
		}
		// A blocking read each, the cancel subscription, and the pool's
		// connections for the other calls: at most one for each of the six
		// duties that call Redis on goroutines of their own (registrar,
		// presence, heartbeater, forwarder, janitor, recoverer), since the
		// pool keeps as many as were ever in use at once.
		if bound := partitions + 1 + idleDuties; conns > bound {
			t.Fatalf("P=%d: an idle worker holds %d connections; want at most %d", partitions, conns, bound)
		}
		rates[partitions] = float64(total) / elapsed.Seconds()
		t.Logf("P=%d: %.1f commands/s idle %v, %d connections", partitions, rates[partitions], sent, conns)
	}
	if rates[4] < 3*rates[1] {
		t.Fatalf("idle rate with 4 partitions %.1f/s, with 1 %.1f/s: want it to grow with the partitions", rates[4], rates[1])
	}
}
