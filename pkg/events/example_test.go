package events_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type Payment struct {
	OrderID string `json:"orderId"`
}

// sendReceipt runs on every "order.paid" event, once per order a day.
var sendReceipt = task.Must[Payment, string]("examples.send-receipt", task.Options{
	Idempotency: task.TTL(`"receipt:" + input.orderId`, 24*time.Hour),
	OnEvents:    []string{"order.paid"},
})

// Pushing an event triggers every task subscribed to its key; the same
// event pushed again (a webhook retried) is deduplicated to the first run.
func ExampleIngester_Push() {
	m, err := miniredis.Run() // an embedded Redis; in production, your Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	url := "redis://" + m.Addr() + "/0"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx := context.Background()

	// A worker registers the subscription when it starts.
	w, err := worker.New(worker.Options{RedisURL: url, Logger: quiet, ShutdownTimeout: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	err = worker.Handle(w, sendReceipt, func(ctx worker.Context, p Payment) (string, error) {
		return "receipt for " + p.OrderID, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := w.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer w.Shutdown(ctx)

	c, err := client.New(client.Options{RedisURL: url, Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ing, err := events.New(c, events.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var first string
	for range 2 {
		ev, err := ing.Push(ctx, "order.paid", json.RawMessage(`{"orderId":"o-1"}`), json.RawMessage(`{"source":"stripe"}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, r := range ev.Runs {
			if first == "" {
				first = r.RunID
			}
			fmt.Println(r.Task, r.Outcome, r.IdempotencyKey, r.RunID == first)
		}
	}
	receipt, err := client.Ref[string](c, first).Result(ctx)
	fmt.Println(receipt, err)
	// Output:
	// examples.send-receipt created receipt:o-1 true
	// examples.send-receipt deduplicated receipt:o-1 true
	// receipt for o-1 <nil>
}
