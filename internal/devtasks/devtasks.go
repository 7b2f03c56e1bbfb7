// Package devtasks holds the two tasks `taskq dev` runs: process-order, with a
// status-strategy key, and handle-webhook, with a ttl key, triggered by
// webhook.received events. They are the tasks of examples/orders and
// examples/webhooks; the CLI keeps its own copy so that the command does
// not depend on the examples, which users copy and change.
package devtasks

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// OrderHandler charges orders.
type OrderHandler struct {
	// Delay stands in for the payment provider's latency.
	Delay time.Duration
}

// Handle is the worker handler of ProcessOrder.
func (h OrderHandler) Handle(ctx worker.Context, o Order) (Receipt, error) {
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

// EventKey is the event that triggers HandleWebhook.
const EventKey = "webhook.received"

// Delivery is the task's input: the webhook payload as the provider sent it.
type Delivery struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Ack is the task's result.
type Ack struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Handled bool   `json:"handled"`
}

// HandleWebhook handles one delivery. The ttl window does not move when a
// duplicate arrives: the first delivery claims the key for 24 hours.
var HandleWebhook = task.Must[Delivery, Ack]("handle-webhook", task.Options{
	Idempotency: task.TTL(`"webhook:" + input.id`, 24*time.Hour),
	OnEvents:    []string{EventKey},
	Retries:     5,
	Timeout:     10 * time.Second,
})

// HandleDelivery is the worker handler of HandleWebhook.
func HandleDelivery(ctx worker.Context, d Delivery) (Ack, error) {
	ctx.Logger().Info("webhook handled", "delivery", d.ID, "type", d.Type)
	return Ack{ID: d.ID, Type: d.Type, Handled: true}, nil
}

// Register adds the handlers of both tasks to w; orders take delay to
// charge (a stand-in for a payment provider's latency).
func Register(w *worker.Worker, delay time.Duration) error {
	if err := worker.Handle(w, ProcessOrder, OrderHandler{Delay: delay}.Handle); err != nil {
		return err
	}
	return worker.Handle(w, HandleWebhook, HandleDelivery)
}
