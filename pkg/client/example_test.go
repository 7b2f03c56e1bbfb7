package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// chargeOrder is the task the examples below trigger: one run per order
// while it is active.
var chargeOrder = task.Must[Order, Receipt]("examples.charge", task.Options{
	Idempotency: task.Status(`"order:" + input.id`, time.Hour),
	Retries:     3,
})

// A client connects to Redis by URL (or takes a go-redis client as
// Options.Redis) and works in a namespace.
func ExampleNew() {
	m, err := miniredis.Run() // an embedded Redis; in production, your Redis
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()

	c, err := client.New(client.Options{
		RedisURL:  "redis://" + m.Addr() + "/0", // default: $TASKQ_REDIS_URL, else redis://127.0.0.1:6379/0
		Namespace: "shop",
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	if err := c.Ping(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("connected")
	// Output:
	// connected
}

// RunNoWait returns as soon as the run is accepted; its ref waits for the
// result when asked.
func ExampleRunNoWait() {
	c, stop := exampleEnv(chargeOrder, charge)
	defer stop()
	ctx := context.Background()

	ref, err := client.RunNoWait(ctx, c, chargeOrder, Order{ID: "A-1", Amount: 40})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("key:", ref.TriggerInfo().IdempotencyKey)
	receipt, err := ref.Result(ctx) // waits until the run ends
	fmt.Println("result:", receipt.OrderID, receipt.Charged, err)
	// Output:
	// key: order:A-1
	// result: A-1 40 <nil>
}

// Run triggers and waits for the result in one call.
func ExampleRun() {
	c, stop := exampleEnv(chargeOrder, charge)
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	receipt, err := client.Run(ctx, c, chargeOrder, Order{ID: "A-2", Amount: 15})
	fmt.Println(receipt.OrderID, receipt.Charged, err)
	// Output:
	// A-2 15 <nil>
}

// RunMany triggers a batch in one round trip. A duplicate inside the batch
// collides with its first occurrence; the refs line up with the inputs.
func ExampleRunMany() {
	c, stop := exampleEnv(chargeOrder, charge)
	defer stop()
	ctx := context.Background()

	refs, err := client.RunMany(ctx, c, chargeOrder, []Order{
		{ID: "B-1", Amount: 10},
		{ID: "B-2", Amount: 20},
		{ID: "B-1", Amount: 10}, // a duplicate of the first
	})
	var bulk *client.BulkCollisionError
	if errors.As(err, &bulk) {
		for i, col := range bulk.Collisions {
			fmt.Printf("trigger %d: key %s held by the run of trigger 0: %t\n", bulk.Indexes[i], col.Key, col.ExistingRunID == refs[0].ID())
		}
	}
	for i, ref := range refs {
		if ref == nil {
			continue
		}
		receipt, err := ref.Result(ctx)
		fmt.Println(i, receipt.OrderID, receipt.Charged, err)
	}
	// Output:
	// trigger 2: key order:B-1 held by the run of trigger 0: true
	// 0 B-1 10 <nil>
	// 1 B-2 20 <nil>
}

// The Inspector reads what a namespace holds: runs, keys, tasks, events.
func ExampleInspector() {
	refund := task.Must[Order, Receipt]("examples.refund", task.Options{
		Idempotency: task.Status(`"refund:" + input.id`, time.Hour),
	})
	c, stop := exampleEnv(refund, func(ctx worker.Context, o Order) (Receipt, error) {
		if o.Amount <= 0 {
			return Receipt{}, errors.New("nothing to refund")
		}
		return charge(ctx, o)
	})
	defer stop()
	ctx := context.Background()

	ref, _ := client.RunNoWait(ctx, c, refund, Order{ID: "C-1"})
	_, _ = ref.Result(ctx)

	in := c.Inspector()
	page, err := in.ListRuns(ctx, client.ListOptions{Task: "examples.refund", Status: client.StatusFailed, Limit: 10})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range page.Items {
		fmt.Println(r.Status, r.IdempotencyKey, r.Attempt, r.Error)
	}
	// A status-strategy key is released when its run ends.
	_, err = in.GetKey(ctx, "refund:C-1")
	var free *client.StateError
	fmt.Println("key held:", !(errors.As(err, &free) && free.Kind == client.ErrKeyNotHeld))
	// Output:
	// failed refund:C-1 1 nothing to refund
	// key held: false
}
