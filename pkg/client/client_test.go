package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

type orderInput struct {
	ID     string `json:"id"`
	Amount any    `json:"amount,omitempty"`
}

type orderResult struct {
	Charged string `json:"charged"`
}

func newClient(t *testing.T, b *redistest.Backend) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// DESIGN.md's TTL timeline: ttl 5 units, triggers at 0, 2, 4, 6 -> runs at
// 0 and 6 only; the rejections name the run from 0; the key is then held
// until 11.
func TestTTLTimeline(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		// Real Redis counts on the wall clock: the checks below leave at
		// least two units of slack for a loaded machine.
		const unit = 250 * time.Millisecond
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[orderInput, orderResult]("ttl-order", task.Options{
			Idempotency: task.TTL(`"order:" + input.id`, 5*unit),
		})
		var accepted []string
		var firstRun string
		for i, at := range []int{0, 2, 4, 6} {
			if i > 0 {
				b.Advance(2 * unit)
			}
			ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "42"})
			switch at {
			case 0:
				if err != nil {
					t.Fatalf("trigger at 0: %v", err)
				}
				firstRun = ref.ID()
				accepted = append(accepted, ref.ID())
			case 2, 4:
				var coll *client.IdempotencyCollisionError
				if !errors.As(err, &coll) || !errors.Is(err, client.ErrIdempotencyCollision) {
					t.Fatalf("trigger at %d: got %v, want a collision", at, err)
				}
				if coll.ExistingRunID != firstRun || coll.Key != "order:42" {
					t.Fatalf("trigger at %d collided with %q key %q, want run %q key order:42", at, coll.ExistingRunID, coll.Key, firstRun)
				}
			case 6:
				if err != nil {
					t.Fatalf("trigger at 6: %v (duplicates must not extend the window)", err)
				}
				accepted = append(accepted, ref.ID())
			}
		}
		if len(accepted) != 2 {
			t.Fatalf("accepted %d runs, want 2", len(accepted))
		}
		ks, ok, err := clientlink.Store(c).GetKey(ctx, "order:42")
		if err != nil || !ok || ks.Owner != accepted[1] {
			t.Fatalf("key state = %+v, %v, %v; want owned by the run from 6", ks, ok, err)
		}
		// Held until 11: about 5 units left at 6.
		if ks.TTL < 4*unit || ks.TTL > 5*unit {
			t.Fatalf("key ttl at 6 = %v, want about %v", ks.TTL, 5*unit)
		}
		b.Advance(3 * unit) // 9: still held
		if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "42"}); !errors.Is(err, client.ErrIdempotencyCollision) {
			t.Fatalf("trigger at 9: %v, want collision", err)
		}
		b.Advance(2*unit + unit/2) // past 11: free
		if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "42"}); err != nil {
			t.Fatalf("trigger after 11: %v", err)
		}
	})
}

// Every error case of key derivation is a typed error, and nothing is
// created or claimed for it.
func TestBadExpressionsAndInputsCreateNothing(t *testing.T) {
	_, err := task.New[orderInput, orderResult]("bad-syntax", task.Options{Idempotency: task.TTL(`input.id +`, time.Minute)})
	var ce *idempotency.Error
	if !errors.As(err, &ce) || !errors.Is(err, task.ErrInvalidConfig) || !errors.Is(err, idempotency.ErrCompile) {
		t.Fatalf("syntax error: got %v, want *idempotency.Error  of kind ErrCompile within a task config error", err)
	}
	if ce.Line != 1 || ce.Column == 0 {
		t.Fatalf("compile error position = %d:%d", ce.Line, ce.Column)
	}

	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		cases := []struct {
			name string
			expr string
			in   orderInput
			meta map[string]any
			is   error
		}{
			{"not a string", `input.amount`, orderInput{ID: "1", Amount: 12}, nil, idempotency.ErrNotString},
			{"empty key", `input.id`, orderInput{ID: ""}, nil, idempotency.ErrEmptyKey},
			{"missing field", `additional_metadata.tenant`, orderInput{ID: "1"}, nil, idempotency.ErrEval},
			{"too long", `input.id`, orderInput{ID: string(make([]byte, 600))}, nil, idempotency.ErrKeyTooLong},
		}
		for _, tc := range cases {
			tk := task.Must[orderInput, orderResult]("bad-"+tc.name[:3], task.Options{Idempotency: task.Status(tc.expr, time.Minute)})
			_, err := client.RunNoWait(ctx, c, tk, tc.in, client.WithMetadata(tc.meta))
			if !errors.Is(err, tc.is) {
				t.Errorf("%s: got %v, want %v", tc.name, err, tc.is)
			}
		}
		var rt *idempotency.Error
		tk := task.Must[orderInput, orderResult]("bad-type", task.Options{Idempotency: task.Status(`input.amount`, time.Minute)})
		_, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1", Amount: 12})
		if !errors.As(err, &rt) || rt.Kind != idempotency.ErrNotString || rt.Type != "double" {
			t.Fatalf("non-string result: %v, want an ErrNotString error naming double", err)
		}
		n, _ := b.Client.DBSize(ctx).Result()
		if b.Real() {
			keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace)
			if err != nil {
				t.Fatal(err)
			}
			n = int64(len(keys))
		}
		if n != 0 {
			t.Fatalf("failed triggers left %d keys in Redis", n)
		}
	})
}

func TestRunManyReportsEachCollision(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[orderInput, orderResult]("bulk", task.Options{Idempotency: task.TTL(`input.id`, time.Minute)})
		first, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "held"})
		if err != nil {
			t.Fatal(err)
		}
		refs, err := client.RunMany(ctx, c, tk, []orderInput{{ID: "a"}, {ID: "held"}, {ID: "b"}, {ID: "a"}})
		var bulk *client.BulkCollisionError
		if !errors.As(err, &bulk) || !errors.Is(err, client.ErrIdempotencyCollision) {
			t.Fatalf("err = %v, want *BulkCollisionError", err)
		}
		if len(refs) != 4 || refs[0] == nil || refs[1] != nil || refs[2] == nil || refs[3] != nil {
			t.Fatalf("refs = %v, want accepted at 0 and 2 only", refs)
		}
		if len(bulk.Collisions) != 2 || fmt.Sprint(bulk.Indexes) != "[1 3]" ||
			bulk.Collisions[0].ExistingRunID != first.ID() || bulk.Collisions[1].ExistingRunID != refs[0].ID() {
			t.Fatalf("collisions = %+v", bulk.Collisions)
		}

		// One bad input fails the whole batch before anything is written.
		_, err = client.RunMany(ctx, c, tk, []orderInput{{ID: "c"}, {ID: ""}})
		var item *client.BatchItemError
		if !errors.As(err, &item) || item.Index != 1 || !errors.Is(err, idempotency.ErrEmptyKey) {
			t.Fatalf("bad batch: %v", err)
		}
		if _, ok, _ := clientlink.Store(c).GetKey(ctx, "c"); ok {
			t.Fatal("a rejected batch claimed a key")
		}
	})
}

func TestLimits(t *testing.T) {
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, MaxInputBytes: 64, MaxMetadataBytes: 32, MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	tk := task.Must[orderInput, orderResult]("limits", task.Options{})
	var le *client.LimitError
	_, err = client.RunNoWait(ctx, c, tk, orderInput{ID: string(make([]byte, 100))})
	if !errors.As(err, &le) || le.What != "input" || le.Limit != 64 {
		t.Fatalf("large input: %v", err)
	}
	_, err = client.RunNoWait(ctx, c, tk, orderInput{ID: "x"}, client.WithMetadata(map[string]any{"k": string(make([]byte, 40))}))
	if !errors.As(err, &le) || le.What != "additional_metadata" {
		t.Fatalf("large metadata: %v", err)
	}
	_, err = client.RunMany(ctx, c, tk, []orderInput{{ID: "1"}, {ID: "2"}, {ID: "3"}})
	if !errors.As(err, &le) || le.What != "batch" || le.Size != 3 {
		t.Fatalf("large batch: %v", err)
	}
	// Nesting depth is bounded even for a task that derives no key.
	deep := []byte(strings.Repeat("[", 10) + strings.Repeat("]", 10))
	c2, _ := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, MaxInputDepth: 5})
	defer c2.Close()
	_, err = c2.TriggerJSON(ctx, tk.Definition(), []byte(`{"a":`+string(deep)+`}`))
	var ie *idempotency.Error
	if !errors.As(err, &ie) || ie.Kind != idempotency.ErrInput || !strings.Contains(err.Error(), "limit of 5 levels") {
		t.Fatalf("deep input: %v", err)
	}
}

func TestCancelQueuedRunWakesWaiter(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[orderInput, orderResult]("cancel-queued", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		ref, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() { _, err := ref.Result(ctx); errc <- err }()
		time.Sleep(50 * time.Millisecond)
		st, err := ref.Cancel(ctx)
		if err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel = %v, %v", st, err)
		}
		select {
		case err := <-errc:
			if !errors.Is(err, task.ErrRunCancelled) {
				t.Fatalf("waiter got %v, want ErrRunCancelled", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("waiter not woken by the cancellation")
		}
		// The key is free again at once.
		if _, err := client.RunNoWait(ctx, c, tk, orderInput{ID: "1"}); err != nil {
			t.Fatalf("trigger after cancel: %v", err)
		}
		if _, err := c.Handle("no-such-run").Cancel(ctx); !errors.Is(err, client.ErrRunNotFound) {
			t.Fatalf("cancel of unknown run: %v", err)
		}
	})
}
