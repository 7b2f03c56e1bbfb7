package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// The duplicates a client's triggers meet, one at a time and in a batch,
// are counted in memory and written when it closes (the flush interval
// here is an hour); triggers that create runs are not duplicates.
func TestDuplicatesCountedAndFlushedOnClose(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, StatsInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		reader := newClient(t, b)
		tk := task.Must[orderInput, orderResult]("dup-counted", task.Options{Idempotency: task.TTL(`"o:" + input.id`, time.Hour)})
		if _, err := client.RunMany(ctx, c, tk, []orderInput{{ID: "1"}, {ID: "2"}, {ID: "3"}}); err != nil {
			t.Fatal(err)
		}
		var coll *client.IdempotencyCollisionError
		if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}); !errors.As(err, &coll) {
			t.Fatalf("duplicate: %v", err)
		}
		var bulk *client.BulkCollisionError
		if _, err := client.RunMany(ctx, c, tk, []orderInput{{ID: "2"}, {ID: "3"}, {ID: "4"}}); !errors.As(err, &bulk) {
			t.Fatalf("batch with duplicates: %v", err)
		}
		dups := func() int64 {
			st, err := reader.Inspector().RunStats(ctx, tk.Name(), time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return st.Total.Duplicates
		}
		if n := dups(); n != 0 {
			t.Fatalf("%d duplicates written before the client flushed", n)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if n := dups(); n != 3 {
			t.Errorf("%d duplicates written on Close, want 3", n)
		}
	})
}
