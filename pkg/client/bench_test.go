package client_test

import (
	"context"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// BenchmarkTrigger measures the client's own cost per trigger: 50
// goroutines call RunNoWait with distinct keys (status strategy), batched
// as the client batches them, against the shared real Redis. go-cpu-ns/op
// is this process's CPU time per trigger (user and system), which the
// wall-clock ns/op mixes with Redis's; the Redis work is make
// script-cost's to count.
func BenchmarkTrigger(b *testing.B) {
	be := redistest.Real(b)
	ctx := context.Background()
	c, err := client.New(client.Options{Redis: be.Client, Namespace: be.Namespace})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("bench", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
	const callers = 50
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < b.N; i += callers {
				if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: strconv.Itoa(i)}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "go-cpu-ns/op")
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
