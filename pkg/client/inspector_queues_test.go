package client_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// QueueStats sums a task's queued runs over the partitions they were
// placed in, and dates the oldest; with no task named it reads the
// registered tasks, here none.
func TestQueueStatsSumsThePartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, 4)
		parts := map[int]bool{}
		const n = 12
		before := time.Now().Add(-time.Second)
		for i := range n {
			ref, err := client.RunNoWait(ctx, c, partKeyed, orderInput{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := engine.RunPartition(ref.ID())
			parts[p] = true
		}
		if len(parts) < 2 {
			t.Fatalf("the runs were placed in partitions %v: the test needs more than one", parts)
		}
		time.Sleep(20 * time.Millisecond)
		st, err := c.Inspector().QueueStats(ctx, partKeyed.Name())
		if err != nil {
			t.Fatal(err)
		}
		if len(st) != 1 || st[0].Task != partKeyed.Name() || st[0].Queued != n || st[0].InFlight != 0 {
			t.Fatalf("QueueStats = %+v, want %d queued", st, n)
		}
		if age := time.Since(st[0].OldestQueued); age <= 0 || st[0].OldestQueued.Before(before) {
			t.Fatalf("oldest queued %v (age %v), want after %v", st[0].OldestQueued, age, before)
		}
		if all, err := c.Inspector().QueueStats(ctx); err != nil || len(all) != 0 {
			t.Fatalf("QueueStats of the registered tasks (none) = %+v, %v", all, err)
		}
	})
}
