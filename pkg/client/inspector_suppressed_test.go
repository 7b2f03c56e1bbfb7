package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/taskq/taskq/internal/engine"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

var suppressedTask = task.Must[orderInput, orderResult]("suppressed-order", task.Options{
	Idempotency: task.TTL(`"order:" + input.id`, time.Hour),
})

// A duplicate of a client's trigger is recorded with source client, or the
// source WithSource names, and "why didn't it run?" finds it by key and by
// owner; the trigger that created the run records nothing.
func TestListSuppressedFindsTheDuplicate(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		owner, err := client.RunNoWait(ctx, c, suppressedTask, orderInput{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		other, err := client.RunNoWait(ctx, c, suppressedTask, orderInput{ID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		page, err := in.ListSuppressed(ctx, client.ListOptions{})
		if err != nil || len(page.Items) != 0 {
			t.Fatalf("before any duplicate: %+v, %v", page, err)
		}
		_, err = client.RunNoWait(ctx, c, suppressedTask, orderInput{ID: "1", Amount: 5})
		var coll *client.IdempotencyCollisionError
		if !errors.As(err, &coll) {
			t.Fatalf("duplicate: %v", err)
		}
		// Records of two partitions are ordered by their stream IDs' time,
		// to the millisecond (their masters' clocks): the second duplicate
		// comes a millisecond later, so that it is the newer on a cluster
		// too.
		time.Sleep(2 * time.Millisecond)
		if _, err := client.RunNoWait(ctx, c, suppressedTask, orderInput{ID: "2"}, client.WithSource("cron")); !errors.As(err, &coll) {
			t.Fatalf("duplicate with a source: %v", err)
		}
		byKey, err := in.ListSuppressed(ctx, client.ListOptions{Key: "order:1"})
		if err != nil {
			t.Fatal(err)
		}
		input, _ := json.Marshal(orderInput{ID: "1", Amount: 5})
		if len(byKey.Items) != 1 || byKey.NextCursor != "" {
			t.Fatalf("by key: %+v", byKey)
		}
		got := byKey.Items[0]
		if got.Key != "order:1" || got.Owner != owner.ID() || got.Task != suppressedTask.Name() || got.Source != client.SourceClient ||
			got.Outcome != client.SuppressedRejected || got.InputDigest != engine.InputDigest(input) || time.Since(got.Time) > time.Minute {
			t.Errorf("by key: %+v", got)
		}
		byOwner, err := in.ListSuppressed(ctx, client.ListOptions{Owner: other.ID()})
		if err != nil {
			t.Fatal(err)
		}
		if len(byOwner.Items) != 1 || byOwner.Items[0].Source != "cron" || byOwner.Items[0].Key != "order:2" {
			t.Errorf("by owner: %+v", byOwner)
		}
		all, err := in.ListSuppressed(ctx, client.ListOptions{Limit: 1})
		if err != nil || len(all.Items) != 1 || all.NextCursor == "" || all.Items[0].Source != "cron" {
			t.Fatalf("first page of one: %+v, %v", all, err)
		}
		rest, err := in.ListSuppressed(ctx, client.ListOptions{Limit: 1, Cursor: all.NextCursor})
		if err != nil || len(rest.Items) != 1 || rest.Items[0].Key != "order:1" {
			t.Fatalf("second page: %+v, %v", rest, err)
		}
		if _, err := in.ListSuppressed(ctx, client.ListOptions{Cursor: "nonsense"}); !errors.Is(err, client.ErrInvalidCursor) {
			t.Errorf("bad cursor: %v, want ErrInvalidCursor", err)
		}
	})
}

// A source with a space is refused before anything is written.
func TestWithSourceIsChecked(t *testing.T) {
	b := redistest.Mini(t)
	c := newClient(t, b)
	_, err := client.RunNoWait(context.Background(), c, suppressedTask, orderInput{ID: "1"}, client.WithSource("two words"))
	if !errors.Is(err, client.ErrInvalidSource) {
		t.Fatalf("trigger with a bad source: %v, want ErrInvalidSource", err)
	}
	page, err := c.Inspector().ListRuns(context.Background(), client.ListOptions{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("runs after a refused trigger: %+v, %v", page, err)
	}
}
