package orders_test

// These tests use package taskqtest, as an application's own tests would:
// copied into another module, they run with nothing installed.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/orders"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

// An order is charged once: a duplicate is rejected while the order's run is
// active and for the retain window (an hour) after it, and a bad amount fails
// at once.
func TestOrderIsChargedOnce(t *testing.T) {
	h := taskqtest.New(t)
	h.StartWorker(func(w *worker.Worker) error {
		return orders.Register(w, orders.Handler{Delay: 200 * time.Millisecond})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()

	o := orders.Order{OrderID: "A-1", Amount: 4200}
	ref, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o)
	if err != nil {
		t.Fatal(err)
	}
	var coll *client.IdempotencyCollisionError
	if _, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o); !errors.As(err, &coll) || coll.ExistingRunID != ref.ID() || coll.Key != "order:A-1" {
		t.Fatalf("duplicate while charging: %v, want a collision with %s on order:A-1", err, ref.ID())
	}
	r, err := ref.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r.OrderID != "A-1" || r.Amount != 4200 || r.Currency != "EUR" || r.ChargeID == "" || r.Attempt != 1 {
		t.Fatalf("receipt = %+v", r)
	}
	if _, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o); !errors.As(err, &coll) || coll.ExistingRunID != ref.ID() {
		t.Fatalf("duplicate after the charge: %v, want a collision with %s (the key is retained)", err, ref.ID())
	}
	// Three triggers, one run.
	run := taskqtest.RequireTriggered(t, h, orders.ProcessOrder, taskqtest.WithInput(o))
	if run.Info.ID != ref.ID() || run.Info.Status != client.StatusSucceeded {
		t.Fatalf("run = %s %s, want %s succeeded", run.Info.ID, run.Info.Status, ref.ID())
	}
	// The key is held for the hour of retain, not for what is left of the
	// 15-minute fallback of the run's claim. The harness's time stands
	// still, so that is exactly an hour.
	k, err := c.Inspector().GetKey(ctx, "order:A-1")
	if err != nil {
		t.Fatal(err)
	}
	if k.OwnerRunID != ref.ID() || k.OwnerStatus != client.StatusSucceeded || k.TTL != time.Hour {
		t.Fatalf("key after the charge = %+v, want owned by %s (succeeded) for an hour", k, ref.ID())
	}

	_, err = client.Run(ctx, c, orders.ProcessOrder, orders.Order{OrderID: "A-2", Amount: -5})
	var failed *client.RunError
	if !errors.As(err, &failed) || failed.Attempts != 1 {
		t.Fatalf("negative amount: %v, want a failure after one attempt (no retries)", err)
	}
}

// Once the retain window has passed, the order can be charged again, as a
// new run; until then every duplicate names the first run.
func TestOrderKeyIsRetainedForAnHour(t *testing.T) {
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	o := orders.Order{OrderID: "B-7", Amount: 990, Currency: "USD"}
	first, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o)
	if err != nil {
		t.Fatal(err)
	}
	runs := taskqtest.Work(ctx, t, h, orders.ProcessOrder, orders.Handler{}.Handle)
	if len(runs) != 1 || runs[0].Info.ID != first.ID() {
		t.Fatalf("worked %d runs, want %s", len(runs), first.ID())
	}
	if r, err := runs[0].Result(); err != nil || r.Currency != "USD" || r.Amount != 990 {
		t.Fatalf("receipt = %+v, %v", r, err)
	}

	h.Advance(time.Hour - time.Millisecond)
	var coll *client.IdempotencyCollisionError
	if _, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o); !errors.As(err, &coll) || coll.ExistingRunID != first.ID() {
		t.Fatalf("duplicate at the end of the retain window: %v, want a collision with %s", err, first.ID())
	}
	h.Advance(time.Millisecond)
	second, err := client.RunNoWait(ctx, c, orders.ProcessOrder, o)
	if err != nil {
		t.Fatalf("trigger after the retain window: %v, want a new run", err)
	}
	got := taskqtest.RequireTriggeredN(t, h, orders.ProcessOrder, 2, taskqtest.WithKey("order:B-7"))
	if got[0].Info.ID != first.ID() || got[1].Info.ID != second.ID() || got[1].Info.Status != client.StatusQueued {
		t.Fatalf("runs of order:B-7: %s, %s (%s); want %s, then %s queued", got[0].Info.ID, got[1].Info.ID, got[1].Info.Status, first.ID(), second.ID())
	}
}

// A retried charge carries the same charge ID as the attempt that failed,
// so the payment provider charges once; a bad amount is not retried.
func TestRetriedChargeKeepsItsChargeID(t *testing.T) {
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := client.RunNoWait(ctx, h.Client(), orders.ProcessOrder, orders.Order{OrderID: "C-3", Amount: 100}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RunNoWait(ctx, h.Client(), orders.ProcessOrder, orders.Order{OrderID: "C-4", Amount: 0}); err != nil {
		t.Fatal(err)
	}
	// The first attempt charges, then loses the provider's answer.
	var firstCharge string
	flaky := func(wctx worker.Context, o orders.Order) (orders.Receipt, error) {
		r, err := orders.Handler{}.Handle(wctx, o)
		if err == nil && wctx.Attempt() == 1 {
			firstCharge = r.ChargeID
			return orders.Receipt{}, errors.New("provider timed out")
		}
		return r, err
	}

	runs := taskqtest.Work(ctx, t, h, orders.ProcessOrder, flaky)
	if len(runs) != 2 || runs[0].Info.Status != client.StatusQueued || runs[0].Info.Attempt != 1 || runs[1].Info.Status != client.StatusFailed || runs[1].Info.Attempt != 1 {
		t.Fatalf("after the first attempts: %d runs, want C-3 waiting for a retry and C-4 failed at once", len(runs))
	}
	if _, err := runs[1].Result(); !errors.As(err, new(*client.RunError)) {
		t.Fatalf("C-4: %v, want a failure", err)
	}
	// The first backoff is a second, plus up to a fifth of it.
	h.Advance(1200 * time.Millisecond)
	runs = taskqtest.Work(ctx, t, h, orders.ProcessOrder, flaky)
	if len(runs) != 1 {
		t.Fatalf("after the backoff: %d runs worked, want C-3's retry", len(runs))
	}
	r, err := runs[0].Result()
	if err != nil {
		t.Fatal(err)
	}
	if r.Attempt != 2 || firstCharge == "" || r.ChargeID != firstCharge {
		t.Fatalf("receipt = %+v, want attempt 2 with the charge ID of attempt 1, %q", r, firstCharge)
	}
}
