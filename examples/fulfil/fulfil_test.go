package fulfil_test

// These tests use package taskqtest, as an application's own tests would:
// copied into another module, they run with nothing installed.

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/fulfil"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

// An order goes through the whole DAG: every node once, each reading its
// parents' outputs, and the workflow ends with them all; a second trigger
// for the order meets the first workflow.
func TestOrderIsFulfilled(t *testing.T) {
	h := taskqtest.New(t)
	h.StartWorker(func(w *worker.Worker) error { return fulfil.Register(w, fulfil.Handler{}) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()

	o := fulfil.Order{ID: "o-1", SKU: "mug", Amount: 1200}
	ref, err := client.RunNoWait(ctx, c, fulfil.Fulfil, o)
	if err != nil {
		t.Fatal(err)
	}
	var col *client.IdempotencyCollisionError
	if _, err := client.RunNoWait(ctx, c, fulfil.Fulfil, o); !errors.As(err, &col) || col.ExistingRunID != ref.ID() {
		t.Fatalf("second trigger of the order = %v; want a collision with %s", err, ref.ID())
	}
	got, err := ref.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Reserve != "hold-mug-o-1" || got.Pack != "parcel-for-hold-mug-o-1" ||
		!strings.HasPrefix(got.Ship, "shipped parcel-for-hold-mug-o-1 paid by receipt-") {
		t.Fatalf("fulfilled = %+v", got)
	}
	for _, tk := range []*task.Task[fulfil.Order, string]{fulfil.Reserve, fulfil.Charge, fulfil.Pack, fulfil.Ship} {
		taskqtest.RequireTriggeredN(t, h, tk, 1)
	}
	taskqtest.RequireTriggeredN(t, h, fulfil.Release, 0)
}

// A declined charge skips the shipping, releases the reservation once, and
// fails the workflow; the parcel is packed all the same.
func TestDeclinedChargeReleasesTheStock(t *testing.T) {
	h := taskqtest.New(t)
	var released atomic.Int32
	h.StartWorker(func(w *worker.Worker) error {
		return fulfil.Register(w, fulfil.Handler{Limit: 10000, Released: func(fulfil.Order) { released.Add(1) }})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	ref, err := client.RunNoWait(ctx, c, fulfil.Fulfil, fulfil.Order{ID: "o-2", SKU: "lamp", Amount: 99900})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Result(ctx); err == nil || !strings.Contains(err.Error(), "charge failed") {
		t.Fatalf("workflow = %v; want failed by its charge", err)
	}
	if n := released.Load(); n != 1 {
		t.Fatalf("released %d times, want once", n)
	}
	info, err := c.Inspector().GetRun(ctx, ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]client.Status{}
	for _, n := range info.Workflow {
		states[n.Name] = n.Status
	}
	want := map[string]client.Status{"reserve": client.StatusSucceeded, "charge": client.StatusFailed, "pack": client.StatusSucceeded,
		"ship": client.StatusSkipped, "release": client.StatusSucceeded}
	for name, st := range want {
		if states[name] != st {
			t.Fatalf("node states = %v; want %v", states, want)
		}
	}
	taskqtest.RequireTriggeredN(t, h, fulfil.Ship, 0)
}
