package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

var (
	inspectA = task.Must[orderInput, orderResult]("inspect-a", task.Options{})
	inspectB = task.Must[orderInput, orderResult]("inspect-b", task.Options{
		Idempotency: task.TTL(`"inspect:" + input.id`, time.Hour),
	})
)

// A listing pages through every run once, newest first, by task, with a
// cursor that stays put while new runs are triggered during the listing.
func TestInspectorListsRunsByTaskWithAStableCursor(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		var wantA []string
		for i := range 25 {
			ref, err := client.RunNoWait(ctx, c, inspectA, orderInput{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			wantA = append(wantA, ref.ID())
			if _, err := client.RunNoWait(ctx, c, inspectB, orderInput{ID: fmt.Sprint(i)}); err != nil {
				t.Fatal(err)
			}
		}
		slices.Reverse(wantA) // newest first
		var got []string
		o := client.ListOptions{Task: inspectA.Name(), Limit: 7}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("the listing does not end")
			}
			page, err := in.ListRuns(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.Items) > o.Limit {
				t.Fatalf("page of %d runs, over the limit of %d", len(page.Items), o.Limit)
			}
			for _, r := range page.Items {
				if r.Task != inspectA.Name() {
					t.Fatalf("run %s of task %s listed for task %s", r.ID, r.Task, inspectA.Name())
				}
				got = append(got, r.ID)
			}
			// Newer runs triggered mid-listing do not shift the pages.
			if _, err := client.RunNoWait(ctx, c, inspectA, orderInput{ID: "late"}); err != nil {
				t.Fatal(err)
			}
			if o.Cursor = page.NextCursor; o.Cursor == "" {
				break
			}
		}
		if !slices.Equal(got, wantA) {
			t.Fatalf("listed %d runs %v,\nwant %d %v", len(got), got, len(wantA), wantA)
		}

		short, err := in.ListRuns(ctx, client.ListOptions{Limit: 3})
		if err != nil || len(short.Items) != 3 || short.NextCursor == "" {
			t.Fatalf("ListRuns = %+v, %v; want 3 runs and a cursor", short, err)
		}
		if _, err := in.ListRuns(ctx, client.ListOptions{Cursor: "nope"}); !errors.Is(err, client.ErrInvalidCursor) {
			t.Errorf("bad cursor: %v, want ErrInvalidCursor", err)
		}
		if _, err := in.ListRuns(ctx, client.ListOptions{Limit: client.ListLimitMax + 1}); err == nil {
			t.Error("a limit over ListLimitMax was accepted")
		}
		if _, err := in.GetRun(ctx, "no-such-run"); !errors.Is(err, client.ErrRunNotFound) {
			t.Errorf("GetRun of a missing run: %v, want ErrRunNotFound", err)
		}
	})
}

// Keys list with their owners; a release is fenced by the owner named.
func TestInspectorListsAndReleasesKeys(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		owners := map[string]string{}
		for i := range 30 {
			ref, err := client.RunNoWait(ctx, c, inspectB, orderInput{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			owners[fmt.Sprintf("inspect:%d", i)] = ref.ID()
		}
		seen := map[string]string{}
		o := client.ListOptions{Match: "inspect:*", Limit: 10}
		for {
			page, err := in.ListKeys(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range page.Items {
				if k.Task != inspectB.Name() || k.OwnerStatus != client.StatusQueued || k.TTL <= 0 {
					t.Errorf("key %+v: want task %s, queued owner, a TTL", k, inspectB.Name())
				}
				seen[k.Key] = k.OwnerRunID
			}
			if o.Cursor = page.NextCursor; o.Cursor == "" {
				break
			}
		}
		if len(seen) != len(owners) {
			t.Fatalf("listed %d keys, want %d", len(seen), len(owners))
		}
		for k, owner := range owners {
			if seen[k] != owner {
				t.Fatalf("key %s listed with owner %s, want %s", k, seen[k], owner)
			}
		}

		var changed *client.StateError
		if _, err := in.ReleaseKey(ctx, "inspect:1", "someone-else"); !(errors.As(err, &changed) && changed.Kind == client.ErrKeyOwnerChanged) || changed.Current != owners["inspect:1"] {
			t.Fatalf("release fenced by the wrong owner: %v, want *KeyOwnerChangedError naming %s", err, owners["inspect:1"])
		}
		released, err := in.ReleaseKey(ctx, "inspect:1", owners["inspect:1"])
		if err != nil || released != owners["inspect:1"] {
			t.Fatalf("release = %q, %v; want released from %s", released, err, owners["inspect:1"])
		}
		if _, err := in.GetKey(ctx, "inspect:1"); !errors.Is(err, client.ErrKeyNotHeld) {
			t.Fatalf("released key: %v, want ErrKeyNotHeld", err)
		}
		if _, err := in.ReleaseKey(ctx, "inspect:1", ""); !errors.Is(err, client.ErrKeyNotHeld) {
			t.Fatalf("release of a free key: %v, want ErrKeyNotHeld", err)
		}
		if released, err := in.ReleaseKey(ctx, "inspect:2", ""); err != nil || released != owners["inspect:2"] {
			t.Fatalf("unfenced release = %q, %v; want released from %s", released, err, owners["inspect:2"])
		}
	})
}
