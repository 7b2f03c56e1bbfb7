package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A waiter that cannot ask for the run's completion notice (Redis went away
// between its subscription and its check) gets the client's
// *UnavailableError, as every other call does.
func TestWaitReportsRedisUnavailable(t *testing.T) {
	srv := redistest.StartServer(t)
	hook := &redistest.ScriptFailure{}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	rdb.AddHook(hook)
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(client.Options{Redis: rdb, Namespace: redistest.Namespace(t), OperationTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("wait-down", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	ref, err := client.RunNoWait(context.Background(), c, tk, orderInput{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	hook.Broken.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ref.Result(ctx)
	var ue *client.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("waiting with Redis gone: %v; want an *UnavailableError", err)
	}
}

// A waiter blocked while Redis is down for a while (longer than go-redis
// retries a call) and restarts does not fail: once its subscription is
// made again it reads the run's status, and it gets the result of the run
// finished after the restart. Before, the broken connection woke it at
// once to read the status of a Redis not back yet, and the wait failed.
func TestWaitSurvivesARedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ns := redistest.Namespace(t)
	c, err := client.New(client.Options{Redis: rdb, Namespace: ns, OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("wait-restart", task.Options{})
	ctx := context.Background()
	ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		got, err := ref.Result(wctx)
		if err == nil && got.Charged != "yes" {
			err = fmt.Errorf("result %+v", got)
		}
		results <- err
	}()
	st := connect.Engine(rdb, ns)
	done, err := st.DoneTopic(ctx, ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiter's subscription", func() bool { return rdb.PubSubNumSub(ctx, done).Val()[done] == 1 })
	srv.Kill()
	time.Sleep(2 * time.Second) // down for longer than a call's retries
	srv.Start()
	waitFor(t, "the waiter to subscribe again", func() bool { return rdb.PubSubNumSub(ctx, done).Val()[done] == 1 })

	// The run is started and finished, as a worker would.
	succeedTheOnlyRun(t, st, tk.Name(), results)
}

// A waiter whose subscription reached Redis, but whose connection broke
// before it read the confirmation, and which then finds Redis down for
// longer than OperationTimeout, does not fail: the subscription is made
// again once Redis is back, and the waiter gets the run's result. Before,
// the unconfirmed subscription timed out, the wait failed, and the channel
// was dropped, so it was never subscribed again.
func TestWaitSurvivesAnOutageBeforeItsSubscriptionIsConfirmed(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	px, err := faulttest.NewProxy(srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	rdb := redis.NewClient(&redis.Options{Addr: px.Addr()})
	direct := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close(); _ = direct.Close() })
	ns := redistest.Namespace(t)
	const timeout = 500 * time.Millisecond
	c, err := client.New(client.Options{Redis: rdb, Namespace: ns, OperationTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("wait-unconfirmed", task.Options{})
	ctx := context.Background()
	ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	st := connect.Engine(direct, ns)
	done, err := st.DoneTopic(ctx, ref.ID())
	if err != nil {
		t.Fatal(err)
	}
	px.DropReplyAndRefuse(done) // the SUBSCRIBE runs; its confirmation is lost
	results := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		got, err := ref.Result(wctx)
		if err == nil && got.Charged != "yes" {
			err = fmt.Errorf("result %+v", got)
		}
		results <- err
	}()
	waitFor(t, "the confirmation to be dropped", func() bool { return px.Dropped.Load() == 1 })
	time.Sleep(4 * timeout) // Redis "down" for longer than OperationTimeout
	select {
	case err := <-results:
		t.Fatalf("the waiter returned during the outage: %v", err)
	default:
	}
	px.Admit()
	waitFor(t, "the waiter to subscribe again", func() bool { return direct.PubSubNumSub(ctx, done).Val()[done] == 1 })

	succeedTheOnlyRun(t, st, tk.Name(), results)
}

// succeedTheOnlyRun starts and finishes the one queued run of task as a
// worker would, with the result {"charged":"yes"}, and then wants its
// waiter, reporting on results, to return without error within 20 s.
func succeedTheOnlyRun(t *testing.T, st engine.Engine, task string, results <-chan error) {
	t.Helper()
	ctx := context.Background()
	if err := st.EnsureGroup(ctx, task); err != nil {
		t.Fatal(err)
	}
	ds, err := st.ReadGroup(ctx, 0, "w", []string{task}, 1, 0)
	if err != nil || len(ds) != 1 {
		t.Fatalf("read: %v, %v", ds, err)
	}
	now := time.Now()
	starts, errs := st.StartBatch(ctx, "w", now, ds)
	if errs[0] != nil || !starts[0].Started {
		t.Fatalf("start: %+v, %v", starts[0], errs[0])
	}
	rs, errs := st.FinishBatch(ctx, []*engine.FinishParams{{RunID: ds[0].RunID, Attempt: starts[0].Attempt, Outcome: engine.OutcomeSucceeded,
		Payload: []byte(`{"charged":"yes"}`), Now: now, RetryAt: now}})
	if errs[0] != nil || !rs[0].Written {
		t.Fatalf("finish: %+v, %v", rs[0], errs[0])
	}
	select {
	case err := <-results:
		if err != nil {
			t.Fatalf("waiter: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the waiter did not return within 20s of the run's end")
	}
}

// waitFor waits up to 20 s until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
