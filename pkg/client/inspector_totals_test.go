package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// The totals the dashboard's lists show (the engine's IndexedRuns and
// IndexedEvents) count the runs and events of every partition (each
// partition's index apart), and IndexedEvents those of one event key.
func TestIndexTotalsCountEveryPartition(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, 4)
		st := clientlink.Store(c)
		if n, err := st.IndexedRuns(ctx); err != nil || n != 0 {
			t.Fatalf("IndexedRuns of an empty namespace = %d, %v", n, err)
		}
		used := map[int]bool{}
		for i := range 30 {
			ref, err := client.RunNoWait(ctx, c, partKeyed, orderInput{ID: fmt.Sprint("total-", i)})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := engine.RunPartition(ref.ID())
			used[p] = true
		}
		if len(used) < 2 {
			t.Fatalf("the runs went to partitions %v: the test needs several", used)
		}
		if n, err := st.IndexedRuns(ctx); err != nil || n != 30 {
			t.Errorf("IndexedRuns = %d, %v, want 30", n, err)
		}
		ing, err := events.New(c, events.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 15 {
			key := "totals.a"
			if i%5 == 0 {
				key = "totals.b"
			}
			if _, err := ing.Push(ctx, key, json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)), nil); err != nil {
				t.Fatal(err)
			}
		}
		for key, want := range map[string]int64{"": 15, "totals.a": 12, "totals.b": 3, "totals.none": 0} {
			if n, err := st.IndexedEvents(ctx, key); err != nil || n != want {
				t.Errorf("IndexedEvents(%q) = %d, %v, want %d", key, n, err, want)
			}
		}
	})
}
