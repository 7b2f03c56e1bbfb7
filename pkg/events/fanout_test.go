package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// aheadClock tells the time a fixed duration from now.
type aheadClock struct{ by time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.by) }

// A push whose ingester stops after storing the event (as one that dies
// there would) fails with a *FanoutPendingError and leaves the event
// without outcomes; a worker started once the grace period has passed
// finishes the fan-out, and the run it creates runs.
func TestWorkerFinishesAFanoutItsIngesterLeft(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		on := []string{"order.paid"}
		receipt := def(t, "send-receipt", task.Options{Idempotency: task.TTL(`"receipt:" + input.orderId`, time.Minute), OnEvents: on})
		audit := def(t, "audit", task.Options{OnEvents: on})
		// A worker registers the subscriptions, then goes, as if the
		// namespace's workers were all down while the event came in.
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []*task.Definition{receipt, audit} {
			if err := w.HandleJSON(d, echo(d.Name)); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}

		c := newClient(t, b, nil)
		clientlink.Store(c).SetFanoutHooks(&engine.FanoutHooks{Steps: true,
			After: func(step engine.FanoutStep, _ string, _ int) error {
				if step == engine.FanoutStored {
					return errors.New("the ingester died here")
				}
				return nil
			}})
		ing := newIngester(t, c, events.Options{})
		_, err = ing.Push(ctx, "order.paid", json.RawMessage(`{"orderId":"o-1"}`), nil)
		var pending *events.FanoutPendingError
		if !errors.As(err, &pending) {
			t.Fatalf("push = %v; want a *FanoutPendingError", err)
		}
		ev, err := c.Inspector().GetEvent(ctx, pending.EventID)
		if err != nil || len(ev.Runs) != 0 {
			t.Fatalf("pending event = %+v, %v", ev, err)
		}

		startWorkerWith(t, b, worker.Options{Clock: aheadClock{events.FanoutGrace}}, receipt, audit)
		deadline := time.Now().Add(10 * time.Second)
		for len(ev.Runs) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the worker did not finish the pending fan-out within 10s")
			}
			time.Sleep(20 * time.Millisecond)
			if ev, err = c.Inspector().GetEvent(ctx, pending.EventID); err != nil {
				t.Fatal(err)
			}
		}
		if len(ev.Runs) != 2 || ev.Runs[0].Task != "audit" || ev.Runs[0].Outcome != events.OutcomeCreated ||
			ev.Runs[1].Task != "send-receipt" || ev.Runs[1].Outcome != events.OutcomeCreated || ev.Runs[1].IdempotencyKey != "receipt:o-1" {
			t.Fatalf("finished event = %+v", ev.Runs)
		}
		for _, r := range ev.Runs {
			if res := waitResult(t, c, r.RunID); !strings.Contains(string(res), `"orderId":"o-1"`) {
				t.Fatalf("result of %s = %s", r.Task, res)
			}
		}
		if n := countRuns(t, c); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
	})
}

// startWorkerWith runs a worker with opts (its Redis, namespace and logger
// filled in) and an echo handler for each definition.
func startWorkerWith(t *testing.T, b *redistest.Backend, opts worker.Options, defs ...*task.Definition) {
	t.Helper()
	opts.Redis, opts.Namespace, opts.Logger = b.Client, b.Namespace, quiet
	opts.LeaseDuration, opts.FetchBlock, opts.ShutdownTimeout = 2*time.Second, 100*time.Millisecond, 200*time.Millisecond
	w, err := worker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := w.HandleJSON(d, echo(d.Name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
}
