package events_test

import (
	"context"
	"encoding/json"
	"github.com/taskq/taskq/internal/engine"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
)

// An event whose task's key is held is swallowed, and recorded as a
// suppressed trigger whose source is the event, found by the key.
func TestEventCollisionIsRecordedAsSuppressed(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		startWorker(t, b, def(t, "send-receipt", task.Options{
			Idempotency: task.TTL(`"receipt:" + input.orderId`, time.Minute), OnEvents: []string{"order.paid"},
		}))
		ing := newIngester(t, c, events.Options{})
		payload := json.RawMessage(`{"orderId":"o-1"}`)
		first, err := ing.Push(ctx, "order.paid", payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		page, err := c.Inspector().ListSuppressed(ctx, client.ListOptions{Key: "receipt:o-1"})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("after the first event: %+v, %v", page, err)
		}
		second, err := ing.Push(ctx, "order.paid", payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if second.Runs[0].Outcome != events.OutcomeDeduplicated {
			t.Fatalf("second event: %+v", second.Runs)
		}
		page, err = c.Inspector().ListSuppressed(ctx, client.ListOptions{Key: "receipt:o-1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != 1 {
			t.Fatalf("suppressed triggers %+v, want one", page.Items)
		}
		got := page.Items[0]
		if got.Source != "event:"+second.ID || got.Owner != first.Runs[0].RunID || got.Task != "send-receipt" ||
			got.Outcome != client.SuppressedDeduplicated || got.InputDigest != engine.InputDigest(payload) {
			t.Errorf("suppressed trigger %+v, want the second event %s deduplicated to %s", got, second.ID, first.Runs[0].RunID)
		}
	})
}
