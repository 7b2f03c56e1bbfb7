package webhooks_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/webhooks"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/worker"
)

// A redelivered webhook is deduplicated to the run of its first delivery,
// before and after that run ended.
func TestRedeliveryIsDeduplicated(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet,
			FetchBlock: 100 * time.Millisecond, ShutdownTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := webhooks.Register(w); err != nil {
			t.Fatal(err)
		}
		// Start registers the task, and with it its event subscription.
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Shutdown(context.Background())
		ing, err := events.New(c, events.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		payload := json.RawMessage(`{"id":"evt_42","type":"invoice.paid"}`)
		first, err := ing.Push(ctx, webhooks.EventKey, payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := ing.Push(ctx, webhooks.EventKey, payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Runs) != 1 || first.Runs[0].Outcome != events.OutcomeCreated || first.Runs[0].IdempotencyKey != "webhook:evt_42" {
			t.Fatalf("first delivery: %+v", first.Runs)
		}
		if len(second.Runs) != 1 || second.Runs[0].Outcome != events.OutcomeDeduplicated || second.Runs[0].RunID != first.Runs[0].RunID {
			t.Fatalf("redelivery: %+v, want deduplicated to %s", second.Runs, first.Runs[0].RunID)
		}
		raw, err := client.Ref[webhooks.Ack](c, first.Runs[0].RunID).Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if raw.ID != "evt_42" || raw.Type != "invoice.paid" || !raw.Handled {
			t.Fatalf("ack = %+v", raw)
		}
		// The delivery ID stays claimed after its run ended: a provider's
		// late retry is still deduplicated, for 24 hours from the first
		// arrival.
		late, err := ing.Push(ctx, webhooks.EventKey, payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(late.Runs) != 1 || late.Runs[0].Outcome != events.OutcomeDeduplicated || late.Runs[0].RunID != first.Runs[0].RunID {
			t.Fatalf("redelivery after the run ended: %+v, want deduplicated to %s", late.Runs, first.Runs[0].RunID)
		}
		k, err := c.LookupKey(ctx, "webhook:evt_42")
		if err != nil {
			t.Fatal(err)
		}
		if k.OwnerRunID != first.Runs[0].RunID || k.TTL <= 23*time.Hour || k.TTL > 24*time.Hour {
			t.Fatalf("key after the run = %+v, want owned by %s for up to 24 hours", k, first.Runs[0].RunID)
		}
	})
}
