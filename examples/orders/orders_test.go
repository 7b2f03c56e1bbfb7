package orders_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/orders"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// An order is charged once: a duplicate is rejected while the order's run is
// active and for the retain window (an hour) after it, and a bad amount fails
// at once.
func TestOrderIsChargedOnce(t *testing.T) {
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
		if err := orders.Register(w, orders.Handler{Delay: 200 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer w.Shutdown(context.Background())

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
		// The key is held for the hour of retain, not for what is left of the
		// 15-minute fallback of the run's claim.
		k, err := c.LookupKey(ctx, "order:A-1")
		if err != nil {
			t.Fatal(err)
		}
		if k.OwnerRunID != ref.ID() || k.OwnerStatus != client.StatusSucceeded || k.TTL <= 15*time.Minute || k.TTL > time.Hour {
			t.Fatalf("key after the charge = %+v, want owned by %s (succeeded) for up to an hour", k, ref.ID())
		}

		_, err = client.Run(ctx, c, orders.ProcessOrder, orders.Order{OrderID: "A-2", Amount: -5})
		var failed *client.RunFailedError
		if !errors.As(err, &failed) || failed.Attempts != 1 {
			t.Fatalf("negative amount: %v, want a failure after one attempt (no retries)", err)
		}
	})
}
