package worker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type childIn struct {
	N  int    `json:"n"`
	ID string `json:"id,omitempty"`
}

// fastRetries retries a failed attempt at once, twice.
var fastRetries = task.Options{Retries: 2, Backoff: task.Backoff{Initial: time.Millisecond, Max: time.Millisecond, Factor: 1}}

var (
	spawnParent = task.Must[in, int]("spawn-parent", fastRetries)
	doubleTask  = task.Must[childIn, int]("spawn-double", task.Options{})
	// keyedChild releases its own key the moment it ends.
	keyedChild = task.Must[childIn, int]("spawn-keyed", task.Options{Idempotency: task.Status(`"order:" + input.id`, time.Minute)})
	otherChild = task.Must[childIn, int]("spawn-other", task.Options{})
)

// childRuns lists the runs of task t in the namespace.
func childRuns(t *testing.T, c *client.Client, name string) []*client.RunInfo {
	t.Helper()
	page, err := c.Inspector().ListRuns(context.Background(), client.ListOptions{Task: name, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return page.Items
}

// A parent that fails and is retried spawns the same children on its
// second attempt: named, numbered and by position; each child runs once,
// knows its parent, and the parent lists its children in order.
func TestRetriedParentGetsTheSameChildren(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		var ran atomic.Int64
		attempts := make(chan []string, 3)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			_ = worker.Handle(w, doubleTask, func(_ worker.Context, x childIn) (int, error) {
				ran.Add(1)
				return 2 * x.N, nil
			})
			_ = worker.Handle(w, spawnParent, func(ctx worker.Context, _ in) (int, error) {
				named, err := worker.Spawn(ctx, doubleTask, childIn{N: 100}, client.ChildName("named"))
				if err != nil {
					return 0, err
				}
				refs, err := worker.SpawnMany(ctx, doubleTask, []childIn{{N: 1}, {N: 2}})
				if err != nil {
					return 0, err
				}
				batch, err := worker.SpawnMany(ctx, doubleTask, []childIn{{N: 10}, {N: 20}}, client.ChildName("batch"))
				if err != nil {
					return 0, err
				}
				third, err := worker.Spawn(ctx, doubleTask, childIn{N: 3})
				if err != nil {
					return 0, err
				}
				all := slices.Concat(refs, batch, []*client.RunRef[int]{third, named})
				ids := make([]string, len(all))
				for i, r := range all {
					ids[i] = r.ID()
				}
				attempts <- ids
				if ctx.Attempt() == 1 {
					return 0, errors.New("first attempt fails")
				}
				results, err := client.WaitAll(ctx, all)
				sum := 0
				for _, r := range results {
					sum += r
				}
				return sum, err
			})
		})
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := ref.Result(ctx)
		if err != nil || sum != 2+4+20+40+6+200 {
			t.Fatalf("parent = %d, %v", sum, err)
		}
		first, second := <-attempts, <-attempts
		if !slices.Equal(first, second) {
			t.Fatalf("second attempt's children %v, first's %v", second, first)
		}
		if n := ran.Load(); n != 6 {
			t.Fatalf("children ran %d times, want 6", n)
		}
		if runs := childRuns(t, c, doubleTask.Name()); len(runs) != 6 {
			t.Fatalf("%d child runs, want 6", len(runs))
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, ch := range info.Children {
			names = append(names, ch.Name)
			if ch.Status != client.StatusSucceeded || ch.Task != doubleTask.Name() || !slices.Contains(first, ch.RunID) {
				t.Fatalf("child %+v", ch)
			}
		}
		if fmt.Sprint(names) != "[#0 #1 #2 batch#0 batch#1 named]" {
			t.Fatalf("children = %v", names)
		}
		for i, id := range first {
			child, err := c.Inspector().GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"#0", "#1", "batch#0", "batch#1", "#2", "named"}[i]
			if child.Parent != ref.ID() || child.IdempotencyKey != engine.ChildKey(ref.ID(), want, "") || child.Strategy != "status" {
				t.Fatalf("child %d: parent %q, key %q, strategy %q", i, child.Parent, child.IdempotencyKey, child.Strategy)
			}
		}
	})
}

// A child that ended, releasing its own key, before its parent's retry is
// not spawned again: the retry gets the same child and its result.
func TestRetryGetsAChildThatEndedAndReleasedItsKey(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		var ran atomic.Int64
		ids := make(chan string, 3)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			_ = worker.Handle(w, keyedChild, func(_ worker.Context, x childIn) (int, error) {
				return int(ran.Add(1)), nil
			})
			_ = worker.Handle(w, spawnParent, func(ctx worker.Context, _ in) (int, error) {
				ref, err := worker.Spawn(ctx, keyedChild, childIn{ID: "42"})
				if err != nil {
					return 0, err
				}
				ids <- ref.ID()
				n, err := ref.Result(ctx)
				if err == nil && ctx.Attempt() == 1 {
					err = errors.New("first attempt fails after its child ended")
				}
				return n, err
			})
		})
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := ref.Result(ctx); err != nil || n != 1 {
			t.Fatalf("parent = %d, %v; want the one child's result", n, err)
		}
		if a, b := <-ids, <-ids; a != b {
			t.Fatalf("retry spawned %s, first attempt %s", b, a)
		}
		key := engine.ChildKey(ref.ID(), "#0", "order:42")
		if _, err := c.Inspector().GetKey(ctx, key); !errors.Is(err, client.ErrKeyNotHeld) {
			t.Fatalf("child's key %q: %v; want it released as the child ended", key, err)
		}
		if runs := childRuns(t, c, keyedChild.Name()); len(runs) != 1 || ran.Load() != 1 {
			t.Fatalf("%d child runs, %d executions; want 1", len(runs), ran.Load())
		}
	})
}

// A handler whose spawns change between attempts (another task under a
// position used before) fails with ErrChildMismatch, for good.
func TestChangedSpawnOrderIsAMismatch(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		errs := make(chan error, 3)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			_ = worker.Handle(w, doubleTask, func(worker.Context, childIn) (int, error) { return 0, nil })
			_ = worker.Handle(w, otherChild, func(worker.Context, childIn) (int, error) { return 0, nil })
			_ = worker.Handle(w, spawnParent, func(ctx worker.Context, _ in) (int, error) {
				var err error
				if ctx.Attempt() == 1 {
					if _, err = worker.Spawn(ctx, doubleTask, childIn{N: 1}); err == nil {
						err = errors.New("first attempt fails")
					}
					return 0, err
				}
				_, err = worker.Spawn(ctx, otherChild, childIn{N: 1})
				errs <- err
				return 0, err
			})
		})
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		info, err := ref.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-errs; !errors.Is(err, worker.ErrChildMismatch) {
			t.Fatalf("second attempt's spawn = %v, want ErrChildMismatch", err)
		}
		if info.Status != client.StatusFailed || info.Attempt != 2 {
			t.Fatalf("parent %s after %d attempts, want failed after 2 (not retried)", info.Status, info.Attempt)
		}
		if runs := childRuns(t, c, otherChild.Name()); len(runs) != 0 {
			t.Fatalf("the mismatched spawn created %d runs", len(runs))
		}
	})
}

var (
	blockerTask = task.Must[childIn, string]("spawn-blocker", task.Options{})
	middleTask  = task.Must[childIn, string]("spawn-middle", task.Options{})
)

// cascadeWorker runs a parent that spawns two blockers, a detached one and
// a middle child that spawns a blocker of its own, then waits for them;
// started gets the ID of each blocker as it starts, and causes the cause
// of its context's end.
func cascadeWorker(t *testing.T, b *redistest.Backend, started chan<- string, causes chan<- error, spawned chan<- struct{}) {
	startWorker(t, b, worker.Options{Concurrency: 8}, func(w *worker.Worker) {
		_ = worker.Handle(w, blockerTask, func(ctx worker.Context, _ childIn) (string, error) {
			started <- ctx.RunID()
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return "", context.Cause(ctx)
		})
		_ = worker.Handle(w, middleTask, func(ctx worker.Context, _ childIn) (string, error) {
			ref, err := worker.Spawn(ctx, blockerTask, childIn{N: 9})
			if err != nil {
				return "", err
			}
			return ref.Result(ctx)
		})
		_ = worker.Handle(w, spawnParent, func(ctx worker.Context, _ in) (int, error) {
			refs, err := worker.SpawnMany(ctx, blockerTask, []childIn{{N: 1}, {N: 2}})
			if err != nil {
				return 0, err
			}
			if _, err := worker.Spawn(ctx, blockerTask, childIn{N: 3}, client.Detached(), client.ChildName("detached")); err != nil {
				return 0, err
			}
			mid, err := worker.Spawn(ctx, middleTask, childIn{N: 4}, client.ChildName("middle"))
			if err != nil {
				return 0, err
			}
			select { // once its spawns have returned (buffered: a re-run does not block)
			case spawned <- struct{}{}:
			default:
			}
			if _, err := client.WaitAll(ctx, refs); err != nil {
				return 0, err
			}
			_, err = mid.Result(ctx)
			return 0, err
		})
	})
}

// descendants maps the runs under parent (children, and theirs) to their
// statuses, by name path.
func descendants(t *testing.T, c *client.Client, parent, prefix string) map[string]client.Status {
	t.Helper()
	info, err := c.Inspector().GetRun(context.Background(), parent)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]client.Status{}
	for _, ch := range info.Children {
		out[prefix+ch.Name] = ch.Status
		for k, v := range descendants(t, c, ch.RunID, prefix+ch.Name+"/") {
			out[k] = v
		}
	}
	return out
}

// Cancelling a parent cancels its children and theirs, whose handlers see
// task.ErrRunCancelled, but not a detached child.
func TestCancellingAParentCancelsItsChildren(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		started, causes := make(chan string, 8), make(chan error, 8)
		cascadeWorker(t, b, started, causes, make(chan struct{}, 1))
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			waitFor(t, started)
		}
		if st, err := ref.Cancel(ctx); err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel = %s, %v", st, err)
		}
		for range 3 {
			if cause := waitFor(t, causes); !errors.Is(cause, task.ErrRunCancelled) {
				t.Fatalf("a child's handler ended with %v, want ErrRunCancelled", cause)
			}
		}
		got := descendants(t, c, ref.ID(), "")
		if st := got["detached"]; st.Terminal() {
			t.Fatalf("the detached child is %s", st)
		}
		delete(got, "detached")
		want := map[string]client.Status{"#0": client.StatusCancelled, "#1": client.StatusCancelled,
			"middle": client.StatusCancelled, "middle/#0": client.StatusCancelled}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("descendants = %v, want %v and the detached child live", got, want)
		}
		info, _ := c.Inspector().GetRun(ctx, ref.ID())
		for _, ch := range info.Children {
			if ch.Name == "detached" {
				if !ch.Detached {
					t.Fatal("the detached child is not shown so")
				}
				if _, err := c.Handle(ch.RunID).Cancel(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// A parent cancelled by a process that died before cancelling its
// children (here: the store's cancel alone) has them cancelled by a
// worker's janitor.
func TestAWorkerFinishesACascadeItsCancellerLeft(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Parallel()
		ctx := context.Background()
		c := newClient(t, b)
		started, causes := make(chan string, 8), make(chan error, 8)
		spawned := make(chan struct{}, 1)
		cascadeWorker(t, b, started, causes, spawned)
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		for range 4 {
			waitFor(t, started)
		}
		// Only once the parent's spawns have returned: a run cancelled
		// while it spawns cancels its children itself (Spawn's own check),
		// which is not the canceller that died this test is about.
		waitFor(t, spawned)
		if r, err := clientlink.Store(c).Cancel(ctx, ref.ID(), "cancelled alone", time.Now()); err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		cancelledAt := time.Now()
		for range 3 {
			select {
			case cause := <-causes:
				if !errors.Is(cause, task.ErrRunCancelled) {
					t.Fatalf("a child's handler ended with %v", cause)
				}
			case <-time.After(engine.CascadeGrace + time.Minute):
				t.Fatal("the children were not cancelled")
			}
		}
		if d := time.Since(cancelledAt); d < engine.CascadeGrace {
			t.Fatalf("children cancelled %s after the parent, within the canceller's grace", d)
		}
		if st := descendants(t, c, ref.ID(), "")["detached"]; st.Terminal() {
			t.Fatalf("the detached child is %s", st)
		}
	})
}

func waitFor[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal("timed out")
		panic("unreachable")
	}
}

// Spawning from a Context other than a handler's fails.
func TestSpawnNeedsTheHandlersContext(t *testing.T) {
	t.Parallel()
	var ctx worker.Context
	if _, err := worker.Spawn(ctx, doubleTask, childIn{}); err == nil {
		t.Fatal("spawned without a handler's Context")
	}
}
