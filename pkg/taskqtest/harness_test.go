package taskqtest_test

import (
	"context"
	"errors"
	"github.com/taskq/taskq/internal/clientlink"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

// A harness needs no Redis of the machine's: its client works against the
// embedded one, in the namespace asked for, on the harness's clock.
func TestNewWiresAClientToAnEmbeddedRedis(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	h := taskqtest.New(t, taskqtest.Options{Namespace: "shop", Now: start})
	ctx := context.Background()
	if err := h.Client().Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if clientlink.Of(h.Client()).Namespace != "shop" || !h.Now().Equal(start) {
		t.Fatalf("namespace %q, now %s; want shop and %s", clientlink.Of(h.Client()).Namespace, h.Now(), start)
	}
	ref := trigger(t, h, signup{Email: "ada@example.com"})
	info, err := ref.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !info.CreatedAt.Equal(start) {
		t.Fatalf("run created at %s, want the harness's time %s", info.CreatedAt, start)
	}
	// The keys are in the embedded Redis, under the namespace.
	if n, err := h.ClientOptions().Redis.Exists(ctx, "taskq:{shop}:key:welcome:ada@example.com").Result(); err != nil || n != 1 {
		t.Fatalf("idempotency key in the embedded Redis: %d, %v; want it there", n, err)
	}
	if n, err := h.ClientOptions().Redis.Exists(ctx, "taskq:{shop}:run:"+ref.ID()).Result(); err != nil || n != 1 {
		t.Fatalf("run record through Redis(): %d, %v", n, err)
	}
	// The default harness uses the client's default namespace.
	if got := clientlink.Of(taskqtest.New(t).Client()).Namespace; got != "default" {
		t.Fatalf("default namespace %q", got)
	}
}

// A worker started on the harness works runs in the background for the
// rest of the test, and is stopped when the test ends: a handler still
// running then has its context cancelled with worker.ErrShutdown.
func TestStartWorkerRunsForTheTest(t *testing.T) {
	t.Parallel()
	var cause atomic.Value
	var w *worker.Worker
	t.Run("inner", func(t *testing.T) {
		h := taskqtest.New(t)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		started := make(chan struct{})
		w = h.StartWorker(func(w *worker.Worker) error {
			if err := worker.Handle(w, sendWelcome, sendMail); err != nil {
				return err
			}
			return worker.Handle(w, chargeInvoice, func(wctx worker.Context, in invoice) (string, error) {
				close(started)
				<-wctx.Done()
				cause.Store(context.Cause(wctx))
				return "", wctx.Err()
			})
		})
		if !strings.HasPrefix(w.Name(), "taskqtest-") {
			t.Errorf("worker name %q", w.Name())
		}
		got, err := client.Run(ctx, h.Client(), sendWelcome, signup{Email: "ada@example.com"})
		if err != nil || got != (welcome{Email: "ada@example.com", Sent: true}) {
			t.Fatalf("Run = %+v, %v", got, err)
		}
		r := taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithStatus(client.StatusSucceeded))
		if out, err := r.Result(); err != nil || !out.Sent {
			t.Fatalf("Result = %+v, %v", out, err)
		}
		// Start registered the tasks, as a worker binary does.
		if _, err := h.Client().Inspector().GetTask(ctx, chargeInvoice.Name()); err != nil {
			t.Fatal(err)
		}
		if _, err := client.RunNoWait(ctx, h.Client(), chargeInvoice, invoice{ID: "in_1"}); err != nil {
			t.Fatal(err)
		}
		<-started
	})
	if err, _ := cause.Load().(error); !errors.Is(err, worker.ErrShutdown) {
		t.Fatalf("handler running at the end of the test saw %v, want worker.ErrShutdown", err)
	}
}

// Options.Worker changes the options of the workers the harness makes.
func TestOptionsWorkerTailorsTheWorkers(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t, taskqtest.Options{Worker: func(o *worker.Options) { o.Concurrency, o.Name = 2, "tailored" }})
	w := h.StartWorker(func(w *worker.Worker) error { return worker.Handle(w, sendWelcome, sendMail) })
	if w.Name() != "tailored" {
		t.Fatalf("worker name = %q, want the one Options.Worker set", w.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A second client, made by the code under test from the harness's
	// options, reaches the same runs.
	c2, err := client.New(h.ClientOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := client.Run(ctx, c2, sendWelcome, signup{Email: "bob@example.com"}); err != nil || !got.Sent {
		t.Fatalf("Run = %+v, %v", got, err)
	}
	taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithKey("welcome:bob@example.com"), taskqtest.WithStatus(client.StatusSucceeded))
}

// Advance moves the clock and the expiry of keys together: a ttl key is
// held for exactly its window of the harness's time, and then a new run is
// accepted.
func TestAdvanceMovesKeysAndClockTogether(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx := context.Background()
	c := h.Client()
	t0 := h.Now()
	first := trigger(t, h, signup{Email: "ada@example.com"})
	k, err := c.Inspector().GetKey(ctx, "welcome:ada@example.com")
	if err != nil || k.TTL != time.Hour {
		t.Fatalf("key = %+v, %v; want held for exactly an hour (no time passed)", k, err)
	}
	h.Advance(59 * time.Minute)
	if !h.Now().Equal(t0.Add(59 * time.Minute)) {
		t.Fatalf("clock at %s, want %s", h.Now(), t0.Add(59*time.Minute))
	}
	if k, err := c.Inspector().GetKey(ctx, "welcome:ada@example.com"); err != nil || k.TTL != time.Minute {
		t.Fatalf("key after 59m = %+v, %v; want a minute left", k, err)
	}
	var coll *client.IdempotencyCollisionError
	if _, err := client.RunNoWait(ctx, c, sendWelcome, signup{Email: "ada@example.com"}); !errors.As(err, &coll) || coll.ExistingRunID != first.ID() {
		t.Fatalf("duplicate inside the window: %v, want a collision with %s", err, first.ID())
	}
	h.Advance(time.Minute)
	var notHeld *client.StateError
	if _, err := c.Inspector().GetKey(ctx, "welcome:ada@example.com"); !(errors.As(err, &notHeld) && notHeld.Kind == client.ErrKeyNotHeld) {
		t.Fatalf("key after the window: %v, want released", err)
	}
	second := trigger(t, h, signup{Email: "ada@example.com"})
	runs := taskqtest.RequireTriggeredN(t, h, sendWelcome, 2, taskqtest.WithKey("welcome:ada@example.com"))
	if runs[0].Info.ID != first.ID() || runs[1].Info.ID != second.ID() || !runs[1].Info.CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("runs %s (created %s), %s (created %s); want %s then %s, an hour apart",
			runs[0].Info.ID, runs[0].Info.CreatedAt, runs[1].Info.ID, runs[1].Info.CreatedAt, first.ID(), second.ID())
	}

	msg := failure(t, func(tb testing.TB) {
		hb := taskqtest.New(tb)
		hb.Advance(-time.Second)
	})
	wantAll(t, msg, "Advance(-1s): time only moves forward")
}

// Runs whose record outlived its retention are gone from what the
// assertions see, as they are from Redis.
func TestAdvancePastRetentionForgetsRuns(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trigger(t, h, signup{Email: "ada@example.com"})
	taskqtest.Work(ctx, t, h, sendWelcome, sendMail)
	h.Advance(client.RetentionDefault - time.Second)
	taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithStatus(client.StatusSucceeded))
	h.Advance(time.Second)
	taskqtest.RequireTriggeredN(t, h, sendWelcome, 0)
}

// A task that asks for durable acknowledgement triggers on the harness as
// any other: the embedded Redis has no replicas to wait for, and the
// harness's client does not wait.
func TestDurableTaskTriggersOnTheHarness(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	durable := task.Must[signup, struct{}]("durable-signup", task.Options{
		Durability: &task.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}})
	ref, err := client.RunNoWait(context.Background(), h.Client(), durable, signup{Email: "ada@example.com"},
		client.WithDurability(task.Durability{Replicas: 2}))
	if err != nil {
		t.Fatalf("a durable task on the harness: %v", err)
	}
	if ref.TriggerInfo().Durability != nil {
		t.Fatal("the harness's trigger waited for replicas")
	}
}
