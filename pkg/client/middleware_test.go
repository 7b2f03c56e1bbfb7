package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A trigger middleware sees every trigger, single and batched, in the
// order given; metadata it adds reaches the run (and the key expression),
// and the outcome, collisions included, comes back through it.
func TestTriggerMiddlewareWrapsEveryTrigger(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		var mu sync.Mutex
		var seen []string
		trace := func(name string) client.TriggerMiddleware {
			return func(next client.TriggerFunc) client.TriggerFunc {
				return func(ctx context.Context, req *client.TriggerRequest) ([]*client.RunHandle, error) {
					for i := range req.Triggers {
						req.Triggers[i].Metadata = json.RawMessage(`{"traceparent":"00-abc-01"}`)
					}
					hs, err := next(ctx, req)
					mu.Lock()
					seen = append(seen, name+":"+req.Task+":"+outcome(hs, err))
					mu.Unlock()
					return hs, err
				}
			}
		}
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace,
			TriggerMiddleware: []client.TriggerMiddleware{trace("outer"), trace("inner")}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		tk := task.Must[orderInput, orderResult]("traced", task.Options{
			Idempotency: task.TTL(`"order:" + input.id + ":" + additional_metadata.traceparent`, time.Minute),
		})

		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if ref.TriggerInfo().IdempotencyKey != "order:1:00-abc-01" {
			t.Errorf("key = %q: the metadata the middleware added did not reach the expression", ref.TriggerInfo().IdempotencyKey)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil || string(info.Metadata) != `{"traceparent":"00-abc-01"}` {
			t.Fatalf("run metadata = %s, %v", info.Metadata, err)
		}
		_, err = client.RunNoWait(ctx, c, tk, orderInput{ID: "1"})
		var dup *client.IdempotencyCollisionError
		if !errors.As(err, &dup) || dup.ExistingRunID != ref.ID() {
			t.Fatalf("duplicate through the middleware = %v", err)
		}
		if _, err := client.RunMany(ctx, c, tk, []orderInput{{ID: "2"}, {ID: "3"}}); err != nil {
			t.Fatal(err)
		}
		want := []string{
			"inner:traced:created", "outer:traced:created",
			"inner:traced:collision", "outer:traced:collision",
			"inner:traced:created,created", "outer:traced:created,created",
		}
		mu.Lock()
		defer mu.Unlock()
		if len(seen) != len(want) {
			t.Fatalf("middleware saw %v, want %v", seen, want)
		}
		for i := range want {
			if seen[i] != want[i] {
				t.Fatalf("middleware saw %v, want %v", seen, want)
			}
		}
	})
}

// A middleware that drops or adds triggers is refused, not obeyed.
func TestTriggerMiddlewareMustKeepTheTriggers(t *testing.T) {
	b := redistest.Mini(t)
	drop := func(next client.TriggerFunc) client.TriggerFunc {
		return func(ctx context.Context, req *client.TriggerRequest) ([]*client.RunHandle, error) {
			req.Triggers = req.Triggers[:0]
			return next(ctx, req)
		}
	}
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, TriggerMiddleware: []client.TriggerMiddleware{drop}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	tk := task.Must[orderInput, orderResult]("dropped", task.Options{})
	if _, err := client.RunNoWait(context.Background(), c, tk, orderInput{ID: "1"}); err == nil {
		t.Fatal("a middleware that dropped the trigger was obeyed")
	}
	if _, err := client.RunMany(context.Background(), c, tk, []orderInput{{ID: "1"}}); err == nil {
		t.Fatal("a middleware that dropped a batch's triggers was obeyed")
	}
}

func outcome(hs []*client.RunHandle, err error) string {
	if err != nil {
		var dup *client.IdempotencyCollisionError
		if errors.As(err, &dup) {
			return "collision"
		}
		return "error"
	}
	out := ""
	for i, h := range hs {
		if i > 0 {
			out += ","
		}
		out += string(h.TriggerInfo().Outcome)
	}
	return out
}
