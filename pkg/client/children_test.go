package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

var (
	childParentTask = task.Must[json.RawMessage, json.RawMessage]("child-parent", task.Options{})
	childOrderTask  = task.Must[json.RawMessage, json.RawMessage]("child-order", task.Options{
		Idempotency: task.TTL(`"order:" + input.id`, time.Hour),
	})
)

// spawner spawns children of parent through the client's link, as a
// handler's worker.Spawn does, its positions counted by pos.
type spawner struct {
	t      *testing.T
	c      *client.Client
	parent string
	pos    atomic.Int64
}

func (s *spawner) spawn(def *task.Definition, inputs []string, opts ...client.RunOption) ([]string, error) {
	raws := make([][]byte, len(inputs))
	for i, in := range inputs {
		raws[i] = []byte(in)
	}
	anyOpts := make([]any, len(opts))
	for i, o := range opts {
		anyOpts[i] = o
	}
	return clientlink.Of(s.c).Spawn(context.Background(), clientlink.SpawnRequest{Def: def, Parent: s.parent, Inputs: raws,
		Many: len(inputs) > 1, Options: anyOpts, Position: func(n int) int { return int(s.pos.Add(int64(n))) - n }})
}

// queuedParent triggers a parent run that no worker takes.
func queuedParent(t *testing.T, c *client.Client) *spawner {
	t.Helper()
	h, err := c.TriggerJSON(context.Background(), childParentTask.Definition(), []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	return &spawner{t: t, c: c, parent: h.ID()}
}

// recorded records, as a spawn that died before it triggered anything
// would have, the child named name of s's parent: run ID placed for the
// key the spawn derives.
func (s *spawner) recorded(def *task.Definition, name, own string) engine.Child {
	s.t.Helper()
	ctx := context.Background()
	e := clientlink.Store(s.c)
	p := &engine.EnqueueParams{RunID: uuid.NewString(), Task: def.Name, Input: []byte(`{"id":"42"}`), Meta: []byte(`{}`),
		Key: engine.ChildKey(s.parent, name, own), Strategy: engine.StrategyTTL, Hold: time.Hour, Retention: time.Hour, Now: time.Now()}
	if err := e.PlaceRuns(ctx, []*engine.EnqueueParams{p}); err != nil {
		s.t.Fatal(err)
	}
	c := engine.Child{Name: name, RunID: p.RunID, Task: def.Name, Key: p.Key}
	if _, err := e.RecordChildren(ctx, s.parent, []engine.Child{c}); err != nil {
		s.t.Fatal(err)
	}
	return c
}

// runsOf counts the runs of task name.
func runsOf(t *testing.T, c *client.Client, name string) int {
	t.Helper()
	page, err := c.Inspector().ListRuns(context.Background(), client.ListOptions{Task: name, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Items)
}

// A spawn replayed after its process died at each point between its
// steps gets the child recorded then, and creates it once: recorded but
// not created (it is created with the recorded ID), created but not marked
// (it is found), created and marked (nothing is sent).
func TestSpawnReplayedAfterEachStepMakesOneChild(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		s := queuedParent(t, c)
		e := clientlink.Store(c)

		rec := s.recorded(childOrderTask.Definition(), "#0", "order:42")
		ids, err := s.spawn(childOrderTask.Definition(), []string{`{"id":"42"}`})
		if err != nil || len(ids) != 1 || ids[0] != rec.RunID {
			t.Fatalf("spawn after a record alone = %v, %v; want the recorded run %s", ids, err, rec.RunID)
		}
		if info, err := c.Handle(rec.RunID).Get(ctx); err != nil || info.Parent != s.parent || info.IdempotencyKey != rec.Key {
			t.Fatalf("child = %+v, %v", info, err)
		}

		// Created, not marked: the trigger finds its ID taken.
		rec2 := s.recorded(childOrderTask.Definition(), "#1", "order:43")
		p := &engine.EnqueueParams{RunID: rec2.RunID, Task: rec2.Task, Input: []byte(`{"id":"43"}`), Meta: []byte(`{}`),
			Key: rec2.Key, Strategy: engine.StrategyStatus, Hold: time.Hour, Retention: time.Hour, Now: time.Now()}
		if r, err := e.Enqueue(ctx, p); err != nil || !r.Accepted {
			t.Fatalf("create = %+v, %v", r, err)
		}
		// It ends, and its key is free: only its record stands.
		if _, err := c.Handle(rec2.RunID).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		ids, err = s.spawn(childOrderTask.Definition(), []string{`{"id":"43"}`})
		if err != nil || ids[0] != rec2.RunID {
			t.Fatalf("spawn after a record and a trigger = %v, %v; want %s", ids, err, rec2.RunID)
		}
		if n := runsOf(t, c, childOrderTask.Name()); n != 2 {
			t.Fatalf("%d child runs, want 2", n)
		}
		kids, err := e.ReadChildren(ctx, s.parent)
		if err != nil || len(kids) != 2 || !kids[0].Created || !kids[1].Created {
			t.Fatalf("children = %+v, %v; want both marked created", kids, err)
		}

		// Created and marked: a replay from the start gets both, and
		// the second, ended, is not made again.
		s.pos.Store(0)
		ids, err = s.spawn(childOrderTask.Definition(), []string{`{"id":"42"}`, `{"id":"43"}`})
		if err != nil || fmt.Sprint(ids) != fmt.Sprint([]string{rec.RunID, rec2.RunID}) {
			t.Fatalf("replay = %v, %v", ids, err)
		}
		if n := runsOf(t, c, childOrderTask.Name()); n != 2 {
			t.Fatalf("%d child runs after the replay, want 2", n)
		}
	})
}

// A spawn under a name used before for another task or key fails with
// ErrChildMismatch and creates nothing; a parent that ended spawns
// nothing; a name must be valid; a trigger refuses the spawn options.
func TestSpawnRefusals(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		s := queuedParent(t, c)
		if _, err := s.spawn(childOrderTask.Definition(), []string{`{"id":"1"}`}, client.ChildName("a")); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			def   *task.Definition
			input string
		}{{childParentTask.Definition(), `{}`}, {childOrderTask.Definition(), `{"id":"2"}`}} {
			if _, err := s.spawn(tc.def, []string{tc.input}, client.ChildName("a")); !errors.Is(err, engine.ErrChildMismatch) {
				t.Fatalf("spawn of %s %s under a used name = %v, want ErrChildMismatch", tc.def.Name, tc.input, err)
			}
		}
		if n := runsOf(t, c, childOrderTask.Name()) + runsOf(t, c, childParentTask.Name()); n != 2 {
			t.Fatalf("%d runs, want the parent and its one child", n)
		}
		for _, name := range []string{"a/b", "#1", "has space"} {
			if _, err := s.spawn(childOrderTask.Definition(), []string{`{"id":"3"}`}, client.ChildName(name)); !errors.Is(err, engine.ErrInvalidChildName) {
				t.Fatalf("name %q: %v", name, err)
			}
		}
		if _, err := s.spawn(childOrderTask.Definition(), []string{`{"id":"3"}`}, client.OnConflict(task.ConflictReject)); err == nil {
			t.Fatal("a spawn took OnConflict")
		}
		if _, err := c.Handle(s.parent).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := s.spawn(childOrderTask.Definition(), []string{`{"id":"4"}`}); !errors.Is(err, engine.ErrRunEnded) {
			t.Fatalf("spawn under a cancelled parent = %v, want ErrRunEnded", err)
		}
		for _, opt := range []client.RunOption{client.ChildName("x"), client.Detached()} {
			if _, err := c.TriggerJSON(ctx, childOrderTask.Definition(), []byte(`{"id":"5"}`), opt); err == nil {
				t.Fatal("a trigger took a spawn's option")
			}
			if _, err := c.TriggerManyJSON(ctx, childOrderTask.Definition(), []client.Trigger{{Input: []byte(`{"id":"5"}`)}}, opt); err == nil {
				t.Fatal("a batch trigger took a spawn's option")
			}
		}
	})
}

var waitAllTask = task.Must[int, int]("wait-all", task.Options{})

// WaitAll returns the results in the order of the refs, a failed run's
// error as a *BatchItemError naming its index.
func TestWaitAllKeepsTheOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := worker.Handle(w, waitAllTask, func(_ worker.Context, n int) (int, error) {
			if n == 3 {
				return 0, worker.NonRetryable(errors.New("three"))
			}
			time.Sleep(time.Duration(10-n) * 5 * time.Millisecond)
			return n * n, nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
		refs, err := client.RunMany(ctx, c, waitAllTask, []int{1, 2, 3, 4})
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, nil)
		got, err := client.WaitAll(ctx, refs)
		if fmt.Sprint(got) != "[1 4 0 16 0]" {
			t.Fatalf("results = %v", got)
		}
		var failed *client.RunError
		if !errors.As(err, &failed) || failed.RunID != refs[2].ID() {
			t.Fatalf("error = %v, want run #2's failure", err)
		}
		var items []int
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var item *client.BatchItemError
			if errors.As(e, &item) {
				items = append(items, item.Index)
			}
		}
		if fmt.Sprint(items) != "[2 4]" {
			t.Fatalf("items in error = %v, want 2 and 4", items)
		}
	})
}
