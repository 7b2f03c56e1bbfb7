package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// started is one run as its handler saw it start.
type started struct {
	id, name string
	prio     int
}

// startOrder queues runs of tk named by names with the priorities prios
// (0: the task's) while no worker runs, then starts one worker with one
// handler slot and returns the runs in the order their handlers began,
// grouped by the partition each run lives in: order is kept per
// partition, whose reader reads it.
func startOrder(t *testing.T, b *redistest.Backend, tk *task.Task[in, out], names []string, prios []int) map[int][]started {
	t.Helper()
	ctx := context.Background()
	c := newClient(t, b)
	for i, name := range names {
		var opts []client.RunOption
		if prios[i] != 0 {
			opts = append(opts, client.WithPriority(prios[i]))
		}
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: name}, opts...); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	order := map[int][]started{}
	done := make(chan struct{})
	total := 0
	startWorker(t, b, worker.Options{Name: tk.Name() + "-w", Concurrency: 1}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			info, err := c.Inspector().GetRun(ctx, ctx.RunID())
			if err != nil {
				return out{}, err
			}
			part, _ := engine.RunPartition(ctx.RunID())
			mu.Lock()
			defer mu.Unlock()
			order[part] = append(order[part], started{id: ctx.RunID(), name: x.ID, prio: info.Priority})
			if total++; total == len(names) {
				close(done)
			}
			return out{ID: x.ID}, nil
		})
	})
	receive(t, "every run to start", done)
	mu.Lock()
	defer mu.Unlock()
	return order
}

// Runs queued while no worker runs start, within each partition, the
// highest priority first, and in the order they were queued within a
// priority; a run without a priority of its own has the task's.
func TestPriorityOrdersTheRunsOfATask(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		tk := task.Must[in, out]("prio-order", task.Options{Priority: 2})
		var names []string
		var prios []int
		for i := range 12 {
			names = append(names, fmt.Sprintf("r%02d", i))
			prios = append(prios, []int{1, 3, 0, 1, 3, 2}[i%6]) // 0: the task's, 2
		}
		for part, runs := range startOrder(t, b, tk, names, prios) {
			for i := 1; i < len(runs); i++ {
				a, z := runs[i-1], runs[i]
				if a.prio < z.prio || (a.prio == z.prio && a.name > z.name) {
					t.Fatalf("partition %d: %s (priority %d) started before %s (priority %d): %+v", part, a.name, a.prio, z.name, z.prio, runs)
				}
			}
		}
	})
}

// With a steady supply of runs of the highest priority, a run of the
// lowest still starts: within its partition, after at most
// engine.PriorityBound+1 runs of a higher priority since the run before it
// of its own priority (or the first read).
func TestPriorityBoundsTheWaitOfALowerPriority(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		tk := task.Must[in, out]("prio-bound", task.Options{})
		var names []string
		var prios []int
		// The low runs first: strict priority would start them last.
		for i := range 3 {
			names, prios = append(names, fmt.Sprintf("low%d", i)), append(prios, 1)
		}
		for i := range 5 * (engine.PriorityBound + 1) {
			names, prios = append(names, fmt.Sprintf("high%02d", i)), append(prios, 3)
		}
		lows := 0
		for part, runs := range startOrder(t, b, tk, names, prios) {
			highs, left, anyHigh := 0, 0, false // high runs since the last low one; lows still queued
			for _, r := range runs {
				if r.prio == 1 {
					left++
				} else {
					anyHigh = true
				}
			}
			for i, r := range runs {
				if r.prio == 1 {
					highs, left = 0, left-1
					lows++
					continue
				}
				if highs++; left > 0 && highs > engine.PriorityBound+1 {
					t.Fatalf("partition %d: a low run waited behind %d high runs (bound %d): %+v", part, highs, engine.PriorityBound+1, runs[:i+1])
				}
			}
			if anyHigh && runs[0].prio != 3 {
				t.Fatalf("partition %d: the first run started has priority %d, want the highest, 3", part, runs[0].prio)
			}
		}
		if lows != 3 {
			t.Fatalf("%d low runs started, want 3", lows)
		}
	})
}
