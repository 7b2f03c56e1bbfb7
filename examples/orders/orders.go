// Package orders is an example task with a status-strategy idempotency key:
// an order is charged once. The key "order:<id>" is held while the run is
// active, through its retries, and for an hour after it ends, so a client
// that retries its request (or a duplicate HTTP call) is told which run
// already handles the order instead of charging twice.
//
// The example worker (examples/order-worker) runs it; `taskq dev` runs a
// copy of it (internal/devtasks).
package orders

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Order is the task's input.
type Order struct {
	OrderID  string `json:"orderId"`
	Amount   int64  `json:"amount"` // in cents
	Currency string `json:"currency,omitempty"`
}

// Receipt is the task's result.
type Receipt struct {
	OrderID  string `json:"orderId"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	// ChargeID is derived from the run's step ID, which is the same on
	// every attempt: a payment provider given it as its idempotency key
	// charges once however often the handler is retried.
	ChargeID string `json:"chargeId"`
	Attempt  int    `json:"attempt"`
}

// ProcessOrder charges an order. Its key expression names the order, so two
// triggers for one order collide; the status strategy keeps the key while
// the charge is in flight (at most 15 minutes if a worker vanishes) and
// retains it for an hour after, so late duplicates collide too.
var ProcessOrder = task.Must[Order, Receipt]("process-order", task.Options{
	Idempotency: task.Status(`"order:" + input.orderId`, 15*time.Minute).WithRetain(time.Hour),
	Retries:     3,
	Timeout:     30 * time.Second,
})

// ErrInvalidAmount is returned for an order whose amount is not positive;
// such a run fails at once, without retries.
var ErrInvalidAmount = errors.New("amount must be positive")

// Handler charges orders.
type Handler struct {
	// Delay stands in for the payment provider's latency.
	Delay time.Duration
}

// Handle is the worker handler of ProcessOrder.
func (h Handler) Handle(ctx worker.Context, o Order) (Receipt, error) {
	if o.Amount <= 0 {
		return Receipt{}, worker.NonRetryable(fmt.Errorf("order %s: %w", o.OrderID, ErrInvalidAmount))
	}
	if h.Delay > 0 {
		t := time.NewTimer(h.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return Receipt{}, ctx.Err()
		case <-t.C:
		}
	}
	cur := o.Currency
	if cur == "" {
		cur = "EUR"
	}
	sum := sha256.Sum256([]byte(ctx.StepID()))
	r := Receipt{OrderID: o.OrderID, Amount: o.Amount, Currency: cur, ChargeID: "ch_" + hex.EncodeToString(sum[:8]), Attempt: ctx.Attempt()}
	ctx.Logger().Info("order charged", "order", o.OrderID, "amount", o.Amount, "currency", cur, "charge", r.ChargeID)
	return r, nil
}

// Register adds the ProcessOrder handler to w.
func Register(w *worker.Worker, h Handler) error {
	return worker.Handle(w, ProcessOrder, h.Handle)
}
