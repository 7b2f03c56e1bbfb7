package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

func newPartitionedClient(t *testing.T, b *redistest.Backend, partitions int) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: partitions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

var (
	partKeyed = task.Must[orderInput, orderResult]("part-keyed", task.Options{Idempotency: task.TTL(`"order:" + input.id`, time.Hour)})
	partPlain = task.Must[orderInput, orderResult]("part-plain", task.Options{})
)

// New refuses a configured count other than the namespace's (naming
// both), and an invalid namespace name; an unconfigured client adopts the
// recorded count.
func TestClientOpensTheNamespacesPartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, 4)
		if n, err := clientlink.Store(c).PartitionCount(ctx); err != nil || n != 4 {
			t.Fatalf("Partitions() = %d, %v", n, err)
		}
		_, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: 2})
		if !errors.Is(err, client.ErrPartitionsMismatch) || !strings.Contains(err.Error(), "4") || !strings.Contains(err.Error(), "2") {
			t.Fatalf("New with 2 on a namespace of 4: %v", err)
		}
		if n, err := clientlink.Store(newClient(t, b)).PartitionCount(ctx); err != nil || n != 4 {
			t.Fatalf("unconfigured client: %d, %v; want the recorded 4", n, err)
		}
		_, err = client.New(client.Options{Redis: b.Client, Namespace: "orders{eu}"})
		var ie *engine.InvalidNamespaceError
		if !errors.As(err, &ie) || !errors.Is(err, client.ErrInvalidNamespace) || !strings.Contains(err.Error(), `"orders{eu}"`) {
			t.Fatalf("New with namespace orders{eu}: %v", err)
		}
		for _, n := range []int{-1, client.PartitionsMax + 1} {
			if _, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: n}); err == nil {
				t.Fatalf("New with %d partitions: no error", n)
			}
		}
	})
}

// With 4 partitions a handle reaches its run wherever the run lives:
// status, result, cancel and signals; a key is looked up, signalled and
// released in its partition; an ID naming a partition the namespace lacks
// is a run not found, never a panic.
func TestHandlesReachRunsInEveryPartition(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, 4)
		parts := map[int]bool{}
		var refs []*client.RunRef[orderResult]
		for i := range 16 {
			tk := partPlain
			if i%2 == 0 {
				tk = partKeyed
			}
			ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			p, ok := engine.RunPartition(ref.ID())
			if !ok || p >= 4 {
				t.Fatalf("run ID %q names no partition of 4", ref.ID())
			}
			if tk == partKeyed && p != engine.KeyPartition(b.Namespace, "order:"+fmt.Sprint(i), 4) {
				t.Fatalf("run %s is not in its key's partition", ref.ID())
			}
			parts[p] = true
			refs = append(refs, ref)
		}
		if len(parts) < 2 {
			t.Fatalf("16 runs all in partitions %v", parts)
		}
		for _, ref := range refs {
			if info, err := ref.Get(ctx); err != nil || info.Status != client.StatusQueued {
				t.Fatalf("%s: %+v, %v", ref.ID(), info, err)
			}
			if _, err := ref.Signal(ctx, "ping"); err != nil {
				t.Fatalf("signal %s: %v", ref.ID(), err)
			}
			if st, err := ref.Cancel(ctx); err != nil || st != client.StatusCancelled {
				t.Fatalf("cancel %s: %s, %v", ref.ID(), st, err)
			}
			if _, err := ref.Result(ctx); !errors.Is(err, task.ErrRunCancelled) {
				t.Fatalf("result of cancelled %s: %v", ref.ID(), err)
			}
		}
		// Keys: a duplicate collides in the key's partition, and the key is
		// found, signalled and released there.
		owner, err := client.RunNoWait(ctx, c, partKeyed, orderInput{ID: "k"})
		if err != nil {
			t.Fatal(err)
		}
		var coll *client.IdempotencyCollisionError
		if _, err := client.RunNoWait(ctx, c, partKeyed, orderInput{ID: "k"}); !errors.As(err, &coll) || coll.ExistingRunID != owner.ID() {
			t.Fatalf("duplicate: %v", err)
		}
		if k, err := c.Inspector().GetKey(ctx, "order:k"); err != nil || k.OwnerRunID != owner.ID() || k.Task != partKeyed.Name() {
			t.Fatalf("LookupKey: %+v, %v", k, err)
		}
		if r, err := c.Signal(ctx, "order:k", 1); err != nil || r.ID() != owner.ID() {
			t.Fatalf("Signal by key: %+v, %v", r, err)
		}
		if released, err := c.Inspector().ReleaseKey(ctx, "order:k", ""); err != nil || released != owner.ID() {
			t.Fatalf("ReleaseKey: %s, %v", released, err)
		}
		// IDs naming no partition of the namespace.
		for _, id := range []string{owner.ID() + ".4", "x.0", "x.y", strings.Repeat("9", 40) + ".3000"} {
			h := c.Handle(id)
			if _, err := h.Get(ctx); !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Get(%q) = %v", id, err)
			}
			if _, err := h.Get(ctx); !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Status(%q) = %v", id, err)
			}
			if _, err := h.Cancel(ctx); !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Cancel(%q) = %v", id, err)
			}
			if _, err := h.Signal(ctx, 1); !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Signal(%q) = %v", id, err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := h.Wait(wctx)
			cancel()
			if !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Wait(%q) = %v", id, err)
			}
			if _, err := c.Inspector().GetRun(ctx, id); !errors.Is(err, client.ErrRunNotFound) {
				t.Fatalf("Inspector.GetRun(%q) = %v", id, err)
			}
		}
	})
}

// A listing of a namespace of 4 partitions, walked page by page while
// runs are triggered between pages, lists every run that existed when it
// started exactly once, newest first; so do the ID listing and the keys
// listing.
func TestListingsMergePartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newPartitionedClient(t, b, 4)
		in := c.Inspector()
		before := map[string]bool{}
		var inputs []orderInput
		for i := range 60 {
			inputs = append(inputs, orderInput{ID: fmt.Sprint(i)})
		}
		for _, tk := range []*task.Task[orderInput, orderResult]{partKeyed, partPlain} {
			refs, err := client.RunMany(ctx, c, tk, inputs[:30])
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				before[r.ID()] = true
			}
		}
		added := 0
		walk := func(list func(cursor string) ([]string, []time.Time, string, error)) {
			t.Helper()
			seen := map[string]bool{}
			var last time.Time
			lastID := ""
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > 50 {
					t.Fatal("the listing does not end")
				}
				ids, created, next, err := list(cursor)
				if err != nil {
					t.Fatal(err)
				}
				for i, id := range ids {
					if seen[id] {
						t.Fatalf("run %s listed twice", id)
					}
					seen[id] = true
					if lastID != "" && created != nil && (created[i].After(last) || created[i].Equal(last) && id > lastID) {
						t.Fatalf("run %s (%v) listed after %s (%v): not newest first", id, created[i], lastID, last)
					}
					if created != nil {
						last = created[i]
					}
					lastID = id
				}
				// New runs between pages: newer than the cursor, so not
				// in what is left of the listing.
				ref, err := client.RunNoWait(ctx, c, partPlain, orderInput{ID: fmt.Sprint("late", added)})
				if err != nil {
					t.Fatal(err)
				}
				added++
				_ = ref
				if cursor = next; cursor == "" {
					break
				}
			}
			for id := range before {
				if !seen[id] {
					t.Fatalf("run %s, there before the listing, was not listed (%d of %d seen)", id, len(seen), len(before))
				}
			}
		}
		walk(func(cursor string) ([]string, []time.Time, string, error) {
			page, err := in.ListRuns(ctx, client.ListOptions{Cursor: cursor, Limit: 7})
			if err != nil {
				return nil, nil, "", err
			}
			ids, created := make([]string, len(page.Items)), make([]time.Time, len(page.Items))
			for i, r := range page.Items {
				ids[i], created[i] = r.ID, r.CreatedAt
			}
			return ids, created, page.NextCursor, nil
		})

		// Every held key, whatever its partition, with its owner.
		keys := map[string]string{}
		o := client.ListOptions{Limit: 5}
		for pages := 0; ; pages++ {
			if pages > 200 {
				t.Fatal("the keys listing does not end")
			}
			page, err := in.ListKeys(ctx, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range page.Items {
				keys[k.Key] = k.OwnerRunID
			}
			if o.Cursor = page.NextCursor; o.Cursor == "" {
				break
			}
		}
		if len(keys) != 30 {
			t.Fatalf("listed %d keys, want 30", len(keys))
		}
		for k, owner := range keys {
			if !before[owner] || !strings.HasPrefix(k, "order:") {
				t.Fatalf("key %s owned by %s", k, owner)
			}
		}
		// A glob keeps what it matches, in every partition.
		page, err := in.ListKeys(ctx, client.ListOptions{Match: "order:1*", Limit: client.ListLimitMax})
		if err != nil {
			t.Fatal(err)
		}
		for o := page; ; {
			for _, k := range o.Items {
				if !strings.HasPrefix(k.Key, "order:1") {
					t.Fatalf("--match order:1* listed %s", k.Key)
				}
			}
			if o.NextCursor == "" {
				break
			}
			if o, err = in.ListKeys(ctx, client.ListOptions{Match: "order:1*", Cursor: o.NextCursor, Limit: client.ListLimitMax}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := in.ListKeys(ctx, client.ListOptions{Cursor: "nonsense"}); !errors.Is(err, client.ErrInvalidCursor) {
			t.Fatalf("bad cursor: %v", err)
		}
	})
}
