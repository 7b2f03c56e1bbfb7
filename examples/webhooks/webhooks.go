// Package webhooks is an example task with a ttl idempotency key: a webhook
// consumer. Providers deliver at least once and retry for hours, so each
// delivery ID is claimed for 24 hours from its first arrival; redeliveries
// inside that window are deduplicated to the first run.
//
// The task is triggered by "webhook.received" events (POST /api/v1/events or
// `taskq events push`). The example worker (examples/webhook-worker) runs
// it; `taskq dev` runs a copy of it (internal/devtasks).
package webhooks

import (
	"encoding/json"
	"time"

	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

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

// Handle is the worker handler of HandleWebhook.
func Handle(ctx worker.Context, d Delivery) (Ack, error) {
	ctx.Logger().Info("webhook handled", "delivery", d.ID, "type", d.Type)
	return Ack{ID: d.ID, Type: d.Type, Handled: true}, nil
}

// Register adds the HandleWebhook handler to w.
func Register(w *worker.Worker) error {
	return worker.Handle(w, HandleWebhook, Handle)
}
