package worker_test

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// BenchmarkWorkerDrain measures the worker's own cost per run: b.N no-op
// runs (status strategy) are queued before the timer starts, and one
// worker processes them to a terminal status. Allocations per op are the
// worker process's per run; go-cpu-ns/op is this process's CPU time per
// run (user and system), which the wall-clock ns/op mixes with Redis's;
// the Redis work is cmd/taskq-bench's to measure.
func BenchmarkWorkerDrain(b *testing.B) {
	be := redistest.Real(b)
	ctx := context.Background()
	c, err := client.New(client.Options{Redis: be.Client, Namespace: be.Namespace, Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[in, out]("drain", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	var wg sync.WaitGroup
	const callers = 50
	errs := make(chan error, callers)
	for g := 0; g < callers; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < b.N; i += callers {
				if _, err := client.RunNoWait(ctx, c, tk, in{ID: strconv.Itoa(i)}); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	stream := redispeek.StreamKey(be.Namespace, tk.Name())

	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	w, err := worker.New(worker.Options{Redis: be.Client, Namespace: be.Namespace, Logger: quiet, Concurrency: 100})
	if err != nil {
		b.Fatal(err)
	}
	worker.Handle(w, tk, func(worker.Context, in) (out, error) { return out{}, nil })
	if err := w.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Shutdown(ctx) })
	// A run's entry leaves the stream once its outcome is recorded.
	deadline := time.Now().Add(time.Minute + time.Duration(b.N)*time.Millisecond)
	for {
		left, err := be.Client.XLen(ctx, stream).Result()
		if err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d runs still queued or running", left, b.N)
		}
		time.Sleep(time.Millisecond)
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "go-cpu-ns/op")
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
