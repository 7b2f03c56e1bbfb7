package webhooks_test

// These tests use package taskqtest, as an application's own tests would:
// copied into another module, they run with nothing installed.

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/webhooks"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/taskqtest"
)

// A redelivered webhook is deduplicated to the run of its first delivery,
// before and after that run ended, for 24 hours from the first arrival;
// after that, the same delivery ID starts a new run.
func TestRedeliveryIsDeduplicated(t *testing.T) {
	h := taskqtest.New(t)
	// Starting the worker registers the task, and with it its event
	// subscription.
	h.StartWorker(webhooks.Register)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	ing, err := events.New(c, events.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
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
	ack, err := client.Ref[webhooks.Ack](c, first.Runs[0].RunID).Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ack.ID != "evt_42" || ack.Type != "invoice.paid" || !ack.Handled {
		t.Fatalf("ack = %+v", ack)
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
	// Three deliveries, one run, with the payload as its typed input.
	delivery := webhooks.Delivery{ID: "evt_42", Type: "invoice.paid"}
	run := taskqtest.RequireTriggered(t, h, webhooks.HandleWebhook, taskqtest.WithInput(delivery))
	if run.Info.ID != first.Runs[0].RunID || run.Info.Status != client.StatusSucceeded {
		t.Fatalf("run = %s %s, want %s succeeded", run.Info.ID, run.Info.Status, first.Runs[0].RunID)
	}
	// The window counts from the first arrival, and no time has passed on
	// the harness's clock: exactly 24 hours.
	k, err := c.Inspector().GetKey(ctx, "webhook:evt_42")
	if err != nil {
		t.Fatal(err)
	}
	if k.OwnerRunID != first.Runs[0].RunID || k.TTL != 24*time.Hour {
		t.Fatalf("key after the run = %+v, want owned by %s for 24 hours", k, first.Runs[0].RunID)
	}

	// A day later the window (and the first run's 24-hour retention) has
	// passed: the same delivery ID is a new delivery.
	h.Advance(24 * time.Hour)
	again, err := ing.Push(ctx, webhooks.EventKey, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Runs) != 1 || again.Runs[0].Outcome != events.OutcomeCreated || again.Runs[0].RunID == first.Runs[0].RunID {
		t.Fatalf("delivery after 24 hours: %+v, want a new run", again.Runs)
	}
	if _, err := client.Ref[webhooks.Ack](c, again.Runs[0].RunID).Result(ctx); err != nil {
		t.Fatal(err)
	}
	taskqtest.RequireTriggered(t, h, webhooks.HandleWebhook, taskqtest.WithInput(delivery), taskqtest.WithStatus(client.StatusSucceeded))
}

// A delivery of another type is handled too, and each delivery ID has a
// key of its own.
func TestEachDeliveryIDIsItsOwnKey(t *testing.T) {
	h := taskqtest.New(t)
	h.StartWorker(webhooks.Register)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ing, err := events.New(h.Client(), events.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		`{"id":"evt_1","type":"invoice.paid"}`,
		`{"id":"evt_2","type":"invoice.paid"}`,
		`{"id":"evt_3","type":"customer.deleted","data":{"customer":"cus_9"}}`,
		`{"id":"evt_1","type":"invoice.paid"}`,
	} {
		if _, err := ing.Push(ctx, webhooks.EventKey, json.RawMessage(p), nil); err != nil {
			t.Fatal(err)
		}
	}
	runs := taskqtest.RequireTriggeredN(t, h, webhooks.HandleWebhook, 3)
	for i, id := range []string{"evt_1", "evt_2", "evt_3"} {
		if runs[i].Input.ID != id || runs[i].Info.IdempotencyKey != "webhook:"+id {
			t.Fatalf("run %d: input %+v key %q, want delivery %s", i, runs[i].Input, runs[i].Info.IdempotencyKey, id)
		}
	}
	deleted := taskqtest.RequireTriggered(t, h, webhooks.HandleWebhook,
		taskqtest.Where(func(d webhooks.Delivery) bool { return d.Type == "customer.deleted" }))
	ack, err := client.Ref[webhooks.Ack](h.Client(), deleted.Info.ID).Result(ctx)
	if err != nil || ack.ID != "evt_3" || !ack.Handled || string(deleted.Input.Data) != `{"customer":"cus_9"}` {
		t.Fatalf("customer.deleted: ack %+v, %v, data %s", ack, err, deleted.Input.Data)
	}
}
