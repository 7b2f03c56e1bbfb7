package client_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// While Redis is stopped (SIGSTOP: it holds its connections and accepts
// new ones, but answers nothing), every call of a client dialled from a URL
// fails with an *UnavailableError within OperationTimeout, give or take
// scheduling: also when more calls are made at once than the client has
// connections, so that some wait their turn and then dial, for a trigger
// that waits for a free sender of batched triggers, and for a waiter,
// which subscribes first. go-redis heeded the deadline only between round
// trips, so such calls took up to twice OperationTimeout, as did a batched
// trigger, and a waiter failed with a bare i/o timeout.
func TestCallsEndWithinOperationTimeoutWhileRedisIsStopped(t *testing.T) {
	srv := redistest.StartServer(t)
	const (
		opTimeout = time.Second
		// Scheduling allowance, generous for a loaded machine; a call
		// that overruns by a whole round trip takes opTimeout longer.
		margin = 600 * time.Millisecond
	)
	c, err := client.New(client.Options{
		// A small pool, so that calls queue for connections.
		RedisURL: srv.URL() + "?pool_size=4", Namespace: redistest.Namespace(t), OperationTimeout: opTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("stopped", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	ctx := context.Background()
	ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "held"})
	if err != nil {
		t.Fatal(err)
	}
	// A waiter beforehand, so that the Pub/Sub connection exists too.
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_, _ = ref.Wait(wctx)
	cancel()

	calls := map[string]func(i int) error{
		"Ping": func(int) error { return c.Ping(ctx) },
		"RunNoWait": func(i int) error {
			_, err := client.RunNoWait(ctx, c, tk, orderInput{ID: fmt.Sprint(i)})
			return err
		},
		"Get":       func(int) error { _, err := ref.Get(ctx); return err },
		"Cancel":    func(int) error { _, err := ref.Cancel(ctx); return err },
		"Result":    func(int) error { _, err := ref.Result(ctx); return err },
		"Tasks":     func(int) error { _, err := c.Inspector().ListTasks(ctx); return err },
		"LookupKey": func(int) error { _, err := c.Inspector().GetKey(ctx, "held"); return err },
		"Signal":    func(int) error { _, err := c.Signal(ctx, "held", "x"); return err },
	}
	if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) }()
	var wg sync.WaitGroup
	for round := 0; round < 5; round++ {
		// Rounds apart, so that triggers batched together find both
		// senders busy with the batches of earlier rounds.
		time.Sleep(20 * time.Millisecond)
		for name, call := range calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				err := call(round)
				took := time.Since(start)
				if !errors.Is(err, client.ErrUnavailable) {
					t.Errorf("%s with Redis stopped: %v; want an *UnavailableError", name, err)
				}
				if took > opTimeout+margin {
					t.Errorf("%s with Redis stopped took %s; OperationTimeout is %s", name, took.Round(time.Millisecond), opTimeout)
				}
			}()
		}
	}
	wg.Wait()
}
