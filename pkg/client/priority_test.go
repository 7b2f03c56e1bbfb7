package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A run has the priority its trigger gave (WithPriority), else its task's,
// else 1; a scheduled run and a batch's runs too. A priority outside 1 to
// 3 is a *task.ConfigError naming it, and nothing is created.
func TestAPriorityComesFromTheTriggerOrTheTask(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := partitionedClient(t, b)
		plain := task.Must[orderInput, orderResult]("prio-plain", task.Options{})
		urgent := task.Must[orderInput, orderResult]("prio-urgent", task.Options{Priority: 3})
		check := func(what string, id string, want int) {
			t.Helper()
			info, err := c.Inspector().GetRun(ctx, id)
			if err != nil || info.Priority != want {
				t.Fatalf("%s: priority %v (%v), want %d", what, info, err, want)
			}
		}
		for _, tc := range []struct {
			what string
			tk   *task.Task[orderInput, orderResult]
			opts []client.RunOption
			want int
		}{
			{"no priority given, the task's default", plain, nil, 1},
			{"the task's", urgent, nil, 3},
			{"the trigger's over the task's", urgent, []client.RunOption{client.WithPriority(1)}, 1},
			{"the trigger's, scheduled", plain, []client.RunOption{client.WithPriority(2), client.RunIn(time.Hour)}, 2},
		} {
			ref, err := client.RunNoWait(ctx, c, tc.tk, orderInput{ID: tc.what}, tc.opts...)
			if err != nil {
				t.Fatalf("%s: %v", tc.what, err)
			}
			check(tc.what, ref.ID(), tc.want)
		}
		refs, err := client.RunMany(ctx, c, plain, []orderInput{{ID: "m1"}, {ID: "m2"}}, client.WithPriority(2))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range refs {
			check("a batch's", r.ID(), 2)
		}
		before := countRuns(t, c)
		for _, p := range []int{0, 4, -1} {
			_, err := client.RunNoWait(ctx, c, plain, orderInput{ID: "bad"}, client.WithPriority(p))
			var ce *task.ConfigError
			if !errors.As(err, &ce) || ce.Field != "priority" || ce.Task != "prio-plain" || !errors.Is(err, task.ErrInvalidConfig) {
				t.Fatalf("priority %d: %v; want a *task.ConfigError naming the priority", p, err)
			}
		}
		if after := countRuns(t, c); after != before {
			t.Fatalf("refused triggers created %d runs", after-before)
		}
	})
}

// A task whose default priority is outside 1 to 3 is not defined.
func TestATaskPriorityOutOfRangeIsAConfigError(t *testing.T) {
	for _, p := range []int{-1, 4} {
		_, err := task.New[orderInput, orderResult]("prio-bad", task.Options{Priority: p})
		var ce *task.ConfigError
		if !errors.As(err, &ce) || ce.Field != "priority" || !errors.Is(err, task.ErrInvalidConfig) {
			t.Fatalf("priority %d: %v; want a *task.ConfigError naming the priority", p, err)
		}
	}
}

func countRuns(t *testing.T, c *client.Client) int {
	t.Helper()
	page, err := c.Inspector().ListRuns(context.Background(), client.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}
