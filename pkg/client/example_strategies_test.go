package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The five ways of handling a duplicate trigger, each as a runnable
// example. They run on an embedded Redis so their output is exact.

type Order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount"`
}

type Receipt struct {
	OrderID string `json:"orderId"`
	Charged int    `json:"charged"`
}

// exampleEnv starts an embedded Redis, a client and a worker running
// handler for tk, and returns the client and a function that stops it all.
func exampleEnv(tk *task.Task[Order, Receipt], handler func(worker.Context, Order) (Receipt, error)) (*client.Client, func()) {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.New(client.Options{Redis: rdb, Logger: quiet})
	if err != nil {
		panic(err)
	}
	w, err := worker.New(worker.Options{Redis: rdb, Logger: quiet, FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	if err := worker.Handle(w, tk, handler); err != nil {
		panic(err)
	}
	if err := w.Start(context.Background()); err != nil {
		panic(err)
	}
	return c, func() {
		w.Shutdown(context.Background())
		c.Close()
		rdb.Close()
		m.Close()
	}
}

func charge(ctx worker.Context, o Order) (Receipt, error) {
	return Receipt{OrderID: o.ID, Charged: o.Amount}, nil
}

// Reject the duplicate (the default): the caller learns which run owns
// the order and decides what to tell its own caller.
func Example_rejectDuplicate() {
	orders := task.Must[Order, Receipt]("charge-order", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, 10*time.Minute),
	})
	gate := make(chan struct{})
	c, stop := exampleEnv(orders, func(ctx worker.Context, o Order) (Receipt, error) { <-gate; return charge(ctx, o) })
	defer stop()
	ctx := context.Background()

	first, _ := client.RunNoWait(ctx, c, orders, Order{ID: "A-1", Amount: 40})
	_, err := client.RunNoWait(ctx, c, orders, Order{ID: "A-1", Amount: 40})
	var dup *client.IdempotencyCollisionError
	if errors.As(err, &dup) {
		fmt.Println("duplicate of the first run:", dup.ExistingRunID == first.ID(), "key:", dup.Key)
	}
	close(gate)
	// Output: duplicate of the first run: true key: order:A-1
}

// Adopt the owner's result: the duplicate attaches to the run that owns
// the key and waits for the same result, so callers cannot tell who did
// the work.
func Example_adoptOwnersResult() {
	orders := task.Must[Order, Receipt]("charge-order", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, 10*time.Minute),
		OnConflict:  task.ConflictAttach,
	})
	gate := make(chan struct{})
	c, stop := exampleEnv(orders, func(ctx worker.Context, o Order) (Receipt, error) { <-gate; return charge(ctx, o) })
	defer stop()
	ctx := context.Background()

	mine, _ := client.RunNoWait(ctx, c, orders, Order{ID: "B-2", Amount: 25})
	theirs, _ := client.RunNoWait(ctx, c, orders, Order{ID: "B-2", Amount: 25})
	close(gate)
	a, _ := mine.Result(ctx)
	b, _ := theirs.Result(ctx)
	fmt.Println(theirs.TriggerInfo().Outcome, "same run:", mine.ID() == theirs.ID(), "same result:", a == b, a.Charged)
	// Output: attached same run: true same result: true 25
}

// Inspect the owner before deciding: reuse a finished owner's result,
// report a duplicate while it is still working.
func Example_inspectOwnerThenDecide() {
	orders := task.Must[Order, Receipt]("charge-order", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, 10*time.Minute).WithRetain(time.Hour),
	})
	c, stop := exampleEnv(orders, charge)
	defer stop()
	ctx := context.Background()

	first, _ := client.RunNoWait(ctx, c, orders, Order{ID: "C-3", Amount: 12})
	first.Wait(ctx) // the owner finishes; retain keeps its key for late duplicates

	_, err := client.RunNoWait(ctx, c, orders, Order{ID: "C-3", Amount: 12})
	var dup *client.IdempotencyCollisionError
	if errors.As(err, &dup) {
		info, _ := dup.Owner.Get(ctx)
		if info.Status == client.StatusSucceeded {
			r, _ := client.Ref[Receipt](c, dup.ExistingRunID).Result(ctx)
			fmt.Println("reused the finished owner's receipt:", r.OrderID, r.Charged)
		} else {
			fmt.Println("duplicate, owner still", info.Status)
		}
	}
	// Output: reused the finished owner's receipt: C-3 12
}

// Signal the owner instead of doing the work: the duplicate's input is
// delivered to the running owner, which reads it as a signal.
func Example_signalOwner() {
	orders := task.Must[Order, Receipt]("charge-order", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, 10*time.Minute),
		OnConflict:  task.ConflictSignal,
	})
	c, stop := exampleEnv(orders, func(ctx worker.Context, o Order) (Receipt, error) {
		total := o.Amount
		sig, err := ctx.NextSignal() // one top-up arrives as a signal
		if err != nil {
			return Receipt{}, err
		}
		var more Order
		if err := json.Unmarshal(sig.Payload, &more); err != nil {
			return Receipt{}, err
		}
		return Receipt{OrderID: o.ID, Charged: total + more.Amount}, nil
	})
	defer stop()
	ctx := context.Background()

	owner, _ := client.RunNoWait(ctx, c, orders, Order{ID: "D-4", Amount: 10})
	dup, _ := client.RunNoWait(ctx, c, orders, Order{ID: "D-4", Amount: 5})
	r, _ := owner.Result(ctx)
	fmt.Println(dup.TriggerInfo().Outcome, "to the owner:", dup.ID() == owner.ID(), "charged:", r.Charged)
	// Output: signalled to the owner: true charged: 15
}

// Supersede the owner: the newest trigger takes the key over at once and
// the previous run is cancelled; its handler's context says by whom.
func Example_supersedeOwner() {
	orders := task.Must[Order, Receipt]("charge-order", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, 10*time.Minute),
		OnConflict:  task.ConflictSupersede,
	})
	started := make(chan struct{}, 2)
	causes := make(chan error, 1)
	c, stop := exampleEnv(orders, func(ctx worker.Context, o Order) (Receipt, error) {
		if o.Amount == 1 { // the first version waits and gets superseded
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return Receipt{}, ctx.Err()
		}
		return charge(ctx, o)
	})
	defer stop()
	ctx := context.Background()

	old, _ := client.RunNoWait(ctx, c, orders, Order{ID: "E-5", Amount: 1})
	<-started
	newer, _ := client.RunNoWait(ctx, c, orders, Order{ID: "E-5", Amount: 2})
	var sup *client.RunError
	fmt.Println("superseded:", newer.TriggerInfo().Superseded == old.ID(), "old run told:", errors.As(<-causes, &sup) && sup.By == newer.ID())
	r, _ := newer.Result(ctx)
	oldInfo, _ := old.Get(ctx)
	var ended *client.RunError
	fmt.Println("old run:", oldInfo.Status, "by the new run:", errors.As(oldInfo.Err(), &ended) && ended.By == newer.ID(), "new run charged:", r.Charged)
	// Output:
	// superseded: true old run told: true
	// old run: cancelled by the new run: true new run charged: 2
}
