package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// fire triggers tk 50 times at once with the given policy and returns the
// handles and errors in trigger order.
func fire(t *testing.T, c *client.Client, tk *task.Task[in, out], policy task.ConflictPolicy, n int) ([]*client.RunRef[out], []error) {
	t.Helper()
	refs := make([]*client.RunRef[out], n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			refs[i], errs[i] = client.RunNoWait(context.Background(), c, tk, in{ID: "k", Mode: fmt.Sprint(i)}, client.OnConflict(policy))
		}(i)
	}
	close(start)
	wg.Wait()
	return refs, errs
}

func TestConflictPoliciesUnderConcurrentDuplicates(t *testing.T) {
	t.Parallel()
	const n = 50
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)

		t.Run("reject", func(t *testing.T) {
			tk := task.Must[in, out]("p-reject", task.Options{Idempotency: task.Status(`"reject:" + input.id`, time.Minute)})
			refs, errs := fire(t, c, tk, task.ConflictReject, n)
			var owner string
			created := 0
			for i := range refs {
				if errs[i] == nil {
					created++
					owner = refs[i].ID()
				}
			}
			if created != 1 {
				t.Fatalf("created %d runs, want 1", created)
			}
			for _, err := range errs {
				var coll *client.IdempotencyCollisionError
				if err != nil && (!errors.As(err, &coll) || coll.ExistingRunID != owner || coll.Owner.ID() != owner) {
					t.Fatalf("rejection %v does not name owner %s", err, owner)
				}
			}
		})

		t.Run("attach", func(t *testing.T) {
			tk := task.Must[in, out]("p-attach", task.Options{Idempotency: task.Status(`"attach:" + input.id`, time.Minute)})
			gate := make(chan struct{})
			startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					<-gate // hold the key until every duplicate has arrived
					return out{ID: x.Mode, By: ctx.RunID()}, nil
				})
			})
			refs, errs := fire(t, c, tk, task.ConflictAttach, n)
			close(gate)
			owners := map[string]bool{}
			created := 0
			for i := range refs {
				if errs[i] != nil {
					t.Fatalf("attach trigger %d: %v", i, errs[i])
				}
				owners[refs[i].ID()] = true
				if refs[i].TriggerInfo().Outcome == client.OutcomeCreated {
					created++
				} else if refs[i].TriggerInfo().Outcome != client.OutcomeAttached {
					t.Fatalf("outcome %q", refs[i].TriggerInfo().Outcome)
				}
			}
			if created != 1 || len(owners) != 1 {
				t.Fatalf("created %d, distinct runs %d; want one run everybody attached to", created, len(owners))
			}
			first, err := refs[0].Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range refs {
				if res, _ := r.Result(ctx); res != first {
					t.Fatalf("attached callers see different results: %+v vs %+v", res, first)
				}
			}
		})

		t.Run("supersede", func(t *testing.T) {
			tk := task.Must[in, out]("p-supersede", task.Options{Idempotency: task.Status(`"supersede:" + input.id`, time.Minute)})
			causes := make(chan error, n+1)
			startWorker(t, b, worker.Options{Concurrency: 4}, func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return out{}, ctx.Err()
				})
			})
			first, err := client.RunNoWait(ctx, c, tk, in{ID: "k", Mode: "first"})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "first owner to run", func() bool { s, _ := runStatus(ctx, first); return s == client.StatusRunning })
			refs, errs := fire(t, c, tk, task.ConflictSupersede, n)
			for i, err := range errs {
				if err != nil {
					t.Fatalf("supersede %d: %v", i, err)
				}
			}
			ks, err := c.Inspector().GetKey(ctx, "supersede:k")
			if err != nil {
				t.Fatal(err)
			}
			active := 0
			for _, r := range append(refs, first) {
				st, _ := runStatus(ctx, r)
				switch {
				case r.ID() == ks.OwnerRunID:
					if st.Terminal() {
						t.Fatalf("the key's owner %s is %s", r.ID(), st)
					}
					active++
				case st != client.StatusCancelled:
					t.Fatalf("loser %s is %s, want cancelled", r.ID(), st)
				}
			}
			if active != 1 {
				t.Fatalf("%d owners, want exactly 1", active)
			}
			// The first owner was running: its handler learns who took over.
			// Other losers may have started too; their causes come as well.
			deadline := time.After(5 * time.Second)
			for found := false; !found; {
				select {
				case cause := <-causes:
					var sup *client.RunError
					if !(errors.As(cause, &sup) && sup.Group == "") || sup.By == "" || !errors.Is(cause, task.ErrRunCancelled) {
						t.Fatalf("cause = %v, want a *client.RunError", cause)
					}
					found = sup.RunID == first.ID()
				case <-deadline:
					t.Fatal("the first owner's handler was not cancelled")
				}
			}
		})

		t.Run("signal", func(t *testing.T) {
			tk := task.Must[in, out]("p-signal", task.Options{Idempotency: task.Status(`"signal:" + input.id`, time.Minute)})
			got := make(chan []string, 1)
			startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					var ids []string
					for s := range ctx.Signals() {
						var payload in
						json.Unmarshal(s.Payload, &payload)
						ids = append(ids, s.SignalID+"="+payload.Mode)
						if len(ids) == n-1 {
							break
						}
					}
					got <- ids
					return out{}, nil
				})
			})
			refs, errs := fire(t, c, tk, task.ConflictSignal, n)
			var want []string
			for i, r := range refs {
				if errs[i] != nil {
					t.Fatalf("signal trigger %d: %v", i, errs[i])
				}
				if r.TriggerInfo().Outcome == client.OutcomeSignalled {
					want = append(want, r.TriggerInfo().SignalID+"="+fmt.Sprint(i))
				}
			}
			if len(want) != n-1 {
				t.Fatalf("%d triggers signalled, want %d", len(want), n-1)
			}
			select {
			case ids := <-got:
				sort.Strings(ids)
				sort.Strings(want)
				if fmt.Sprint(ids) != fmt.Sprint(want) {
					t.Fatalf("owner received %v\nwant %v", ids, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("owner did not receive every signal")
			}
		})
	})
}

func TestSignalByKeyErrors(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("sig-errors", task.Options{Idempotency: task.Status(`input.id`, time.Minute).WithRetain(time.Minute)})
		if _, err := c.Signal(ctx, "nobody", map[string]int{"x": 1}); !errors.Is(err, client.ErrKeyNotHeld) {
			t.Fatalf("signal to a free key: %v", err)
		}
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "r"})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.Signal(ctx, "r", "hello")
		if err != nil || rec.ID() != ref.ID() || rec.TriggerInfo() != (client.TriggerInfo{Outcome: client.OutcomeSignalled, IdempotencyKey: "r", SignalID: rec.TriggerInfo().SignalID}) || rec.TriggerInfo().SignalID == "" {
			t.Fatalf("signal to a queued owner: %+v, %v", rec, err)
		}
		ref.Cancel(ctx)
		_, err = c.Signal(ctx, "r", "late")
		var fin *client.StateError
		if !(errors.As(err, &fin) && fin.Kind == client.ErrOwnerFinished) || fin.RunID != ref.ID() || fin.Status != client.StatusCancelled {
			t.Fatalf("signal to a retained key: %v", err)
		}
		info, err := c.Inspector().GetKey(ctx, "r")
		if err != nil || info.OwnerRunID != ref.ID() || info.OwnerStatus != client.StatusCancelled {
			t.Fatalf("lookup of a retained key = %+v, %v", info, err)
		}
	})
}

// Debounce: five triggers inside the window give one execution, with the
// fifth input.
func TestDebounceRunsOnceWithNewestInput(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("debounce", task.Options{Idempotency: task.Debounce(`input.id`, 300*time.Millisecond)})
		ran := make(chan string, 10)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				ran <- x.Mode
				return out{ID: x.Mode}, nil
			})
		})
		var ids []string
		for i := 1; i <= 5; i++ {
			ref, err := client.RunNoWait(ctx, c, tk, in{ID: "d", Mode: fmt.Sprint(i)})
			if err != nil {
				t.Fatalf("trigger %d: %v", i, err)
			}
			ids = append(ids, ref.ID())
			if i > 1 && ref.TriggerInfo().Outcome != client.OutcomeDebounced {
				t.Fatalf("trigger %d outcome %q, want debounced", i, ref.TriggerInfo().Outcome)
			}
			time.Sleep(100 * time.Millisecond)
		}
		res, err := client.Ref[out](c, ids[0]).Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.ID != "5" {
			t.Fatalf("ran with input %q, want the fifth", res.ID)
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("debounced triggers name different runs: %v", ids)
			}
		}
		time.Sleep(200 * time.Millisecond)
		if len(ran) != 1 {
			t.Fatalf("%d executions, want 1", len(ran))
		}
	})
}

// Retention: duplicates collide after the owner ended until retain passes.
func TestRetainHoldsKeyAfterRunEnds(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("retain", task.Options{Idempotency: task.Status(`input.id`, time.Minute).WithRetain(400 * time.Millisecond)})
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "x"})
		if err != nil {
			t.Fatal(err)
		}
		wait(t, ref)
		ended := time.Now()
		_, err = client.RunNoWait(ctx, c, tk, in{ID: "x"})
		var coll *client.IdempotencyCollisionError
		if !errors.As(err, &coll) || coll.ExistingRunID != ref.ID() {
			t.Fatalf("duplicate inside retain: %v", err)
		}
		if res, err := client.Ref[out](c, coll.ExistingRunID).Result(ctx); err != nil || res.ID != "x" {
			t.Fatalf("owner result through the collision: %+v, %v", res, err)
		}
		time.Sleep(500*time.Millisecond - time.Since(ended))
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: "x"}); err != nil {
			t.Fatalf("trigger after retain: %v", err)
		}
		if _, err := task.New[in, out]("retain-bad", task.Options{Idempotency: task.Status(`input.id`, time.Minute).WithRetain(31 * 24 * time.Hour)}); !errors.Is(err, task.ErrInvalidConfig) {
			t.Fatalf("retain over the maximum: %v", err)
		}
	})
}

// Supersede also takes a key held only by retention.
func TestSupersedeRetainedKey(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("sup-retain", task.Options{Idempotency: task.Status(`input.id`, time.Minute).WithRetain(time.Minute)})
		ref, _ := client.RunNoWait(ctx, c, tk, in{ID: "y"})
		ref.Cancel(ctx)
		next, err := client.RunNoWait(ctx, c, tk, in{ID: "y"}, client.OnConflict(task.ConflictSupersede))
		if err != nil || next.TriggerInfo().Superseded != ref.ID() {
			t.Fatalf("supersede of retained key: %v (superseded %q)", err, next.TriggerInfo().Superseded)
		}
		if info, _ := c.Inspector().GetKey(ctx, "y"); info.OwnerRunID != next.ID() {
			t.Fatalf("owner after supersede = %s", info.OwnerRunID)
		}
	})
}
