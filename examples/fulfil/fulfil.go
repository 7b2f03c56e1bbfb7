// Package fulfil is an example of a workflow: an order is fulfilled by a
// DAG of tasks, reserve the stock, then charge the card and pack the
// parcel side by side, then ship; should any of them fail for good, the
// reservation is released.
//
//	reserve ──┬── charge ──┬── ship
//	          └── pack ────┘          (release, on failure)
//
// The workflow's run (task Fulfil) holds the order's idempotency key for
// the whole DAG: a second trigger for the same order meets the first
// workflow. Every node gets the order as its input and reads what its
// parents returned with worker.ParentOutput. While its nodes run, the
// workflow holds no worker slot.
//
// The example worker (examples/fulfil-worker) runs these tasks.
package fulfil

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Order is the input of the workflow and of each of its nodes.
type Order struct {
	ID     string `json:"id"`
	SKU    string `json:"sku"`
	Amount int    `json:"amount"` // cents
}

// Fulfilled is the workflow's result: each node's output under its task's
// name.
type Fulfilled struct {
	Reserve string `json:"reserve"`
	Charge  string `json:"charge"`
	Pack    string `json:"pack"`
	Ship    string `json:"ship"`
}

var retries = task.Options{Retries: 3, Backoff: task.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second, Factor: 2}}

// The nodes, each a task of its own.
var (
	Reserve = task.Must[Order, string]("reserve", retries)
	Charge  = task.Must[Order, string]("charge", retries)
	Pack    = task.Must[Order, string]("pack", retries)
	Ship    = task.Must[Order, string]("ship", retries)
	// Release runs once when a node failed for good.
	Release = task.Must[Order, bool]("release", retries)
)

// Fulfil is the workflow: one run per order while it is active (the
// status strategy), and each "order.placed" event triggers it.
var Fulfil = task.Must[Order, Fulfilled]("fulfil", task.Options{
	Idempotency: task.Status(`"fulfil:" + input.id`, 24*time.Hour),
	OnEvents:    []string{"order.placed"},
	Workflow: &task.Workflow{
		Nodes: []task.Node{
			{Task: Reserve.Definition()},
			{Task: Charge.Definition(), Parents: []string{"reserve"}},
			{Task: Pack.Definition(), Parents: []string{"reserve"}},
			{Task: Ship.Definition(), Parents: []string{"charge", "pack"}},
		},
		OnFailure: Release.Definition(),
	},
})

// ErrDeclined is the card's refusal: the charge fails for good.
var ErrDeclined = errors.New("card declined")

// Handler runs the nodes.
type Handler struct {
	// Delay stands in for the time each node takes.
	Delay time.Duration
	// Limit declines a charge above it, in cents (0: no limit).
	Limit int
	// Released is called when a reservation is released (nil: nothing).
	Released func(o Order)
}

// Register registers the workflow and its nodes' handlers on w.
func Register(w *worker.Worker, h Handler) error {
	for _, r := range []struct {
		t *task.Task[Order, string]
		f func(worker.Context, Order) (string, error)
	}{{Reserve, h.reserve}, {Charge, h.charge}, {Pack, h.pack}, {Ship, h.ship}} {
		if err := worker.Handle(w, r.t, r.f); err != nil {
			return err
		}
	}
	if err := worker.Handle(w, Release, func(ctx worker.Context, o Order) (bool, error) {
		if h.Released != nil {
			h.Released(o)
		}
		return true, nil
	}); err != nil {
		return err
	}
	return worker.HandleWorkflow(w, Fulfil)
}

func (h Handler) wait(ctx context.Context) error {
	if h.Delay <= 0 {
		return nil
	}
	t := time.NewTimer(h.Delay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func (h Handler) reserve(ctx worker.Context, o Order) (string, error) {
	if err := h.wait(ctx); err != nil {
		return "", err
	}
	return "hold-" + o.SKU + "-" + o.ID, nil
}

func (h Handler) charge(ctx worker.Context, o Order) (string, error) {
	hold, err := worker.ParentOutput(ctx, Reserve)
	if err != nil {
		return "", err
	}
	if err := h.wait(ctx); err != nil {
		return "", err
	}
	if h.Limit > 0 && o.Amount > h.Limit {
		return "", worker.NonRetryable(fmt.Errorf("order %s: %w (%d cents against %s)", o.ID, ErrDeclined, o.Amount, hold))
	}
	// The step ID is the same on every attempt: the payment provider's
	// idempotency key.
	return "receipt-" + ctx.StepID(), nil
}

func (h Handler) pack(ctx worker.Context, o Order) (string, error) {
	hold, err := worker.ParentOutput(ctx, Reserve)
	if err != nil {
		return "", err
	}
	if err := h.wait(ctx); err != nil {
		return "", err
	}
	return "parcel-for-" + hold, nil
}

func (h Handler) ship(ctx worker.Context, o Order) (string, error) {
	receipt, err := worker.ParentOutput(ctx, Charge)
	if err != nil {
		return "", err
	}
	parcel, err := worker.ParentOutput(ctx, Pack)
	if err != nil {
		return "", err
	}
	if err := h.wait(ctx); err != nil {
		return "", err
	}
	return fmt.Sprintf("shipped %s paid by %s", parcel, receipt), nil
}
