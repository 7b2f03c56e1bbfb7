package client_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

var refuseKey = task.Must[map[string]any, struct{}]("refuse-key", task.Options{Idempotency: task.TTL(`input.id`, time.Minute)})

// Every refusal of a trigger by one of the task's expressions is a public
// type, reachable with errors.As from RunNoWait, Run and RunMany, naming
// the task and the expression and wrapping the expression's own error;
// nothing is created.
func TestExpressionRefusalsArePublicTypes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		// The input is dynamic, so the expressions name fields the
		// triggers below leave out.
		group := task.Must[map[string]any, struct{}]("refuse-group", task.Options{
			Concurrency: []task.Concurrency{{Expression: `input.tenant`, MaxRuns: 1}}})
		limit := task.Must[map[string]any, struct{}]("refuse-limit", task.Options{
			RateLimits: []task.RateLimit{{Name: "per-user", Limit: 1, Period: time.Minute, Key: `input.user`}}})
		in := map[string]any{"other": "x"}

		check := func(t *testing.T, err error, tk *task.Task[map[string]any, struct{}]) {
			t.Helper()
			var ee *idempotency.Error
			if !errors.As(err, &ee) || ee.Kind != idempotency.ErrEval {
				t.Fatalf("%v: want it to wrap an ErrEval *idempotency.Error", err)
			}
			switch tk {
			case refuseKey:
				var ke *task.KeyError
				if !errors.As(err, &ke) || ke.Kind != task.KeyIdempotency || ke.Task != "refuse-key" || ke.Expression != "input.id" {
					t.Fatalf("%v: want an idempotency *task.KeyError naming the task and input.id", err)
				}
			case group:
				var ge *task.KeyError
				if !errors.As(err, &ge) || ge.Kind != task.KeyConcurrency || ge.Task != "refuse-group" || ge.Expression != "input.tenant" {
					t.Fatalf("%v: want a concurrency *task.KeyError naming the task and input.tenant", err)
				}
			case limit:
				var rk *task.KeyError
				if !errors.As(err, &rk) || rk.Kind != task.KeyRateLimit || rk.Task != "refuse-limit" || rk.Limit != "per-user" {
					t.Fatalf("%v: want a rate limit *task.KeyError naming the limit", err)
				}
			}
		}
		for _, tk := range []*task.Task[map[string]any, struct{}]{refuseKey, group, limit} {
			t.Run(tk.Name(), func(t *testing.T) {
				ref, err := client.RunNoWait(ctx, c, tk, in)
				if ref != nil {
					t.Fatalf("RunNoWait made run %s", ref.ID())
				}
				check(t, err, tk)
				_, err = client.Run(ctx, c, tk, in)
				check(t, err, tk)
				refs, err := client.RunMany(ctx, c, tk, []map[string]any{{"id": "1", "tenant": "t", "user": "u"}, in})
				var item *client.BatchItemError
				if len(refs) != 0 || !errors.As(err, &item) || item.Index != 1 {
					t.Fatalf("RunMany = %v, %v; want a *BatchItemError for #1 and no runs", refs, err)
				}
				check(t, err, tk)
			})
		}
		runs, err := c.Inspector().ListRuns(ctx, client.ListOptions{})
		if err != nil || len(runs.Items) != 0 {
			t.Fatalf("runs after refused triggers: %v, %v", runs, err)
		}
	})
}

// A handle prints as its run's ID, and so does a RunRef, which embeds one.
func TestHandlePrintsAsItsRunID(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		ref, err := client.RunNoWait(context.Background(), c, refuseKey, map[string]any{"id": "print"})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(ref); got != ref.ID() || got == "" {
			t.Errorf("fmt.Sprint(RunRef) = %q, want %q", got, ref.ID())
		}
		if got := fmt.Sprintf("%v %s", ref.RunHandle, c.Handle("r-1")); got != ref.ID()+" r-1" {
			t.Errorf("handles print as %q", got)
		}
		var none *client.RunHandle
		if got := fmt.Sprint(none); got != "<nil>" {
			t.Errorf("a nil handle prints as %q", got)
		}
	})
}
