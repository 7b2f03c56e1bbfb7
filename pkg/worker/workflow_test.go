package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The diamond dag-a -> {dag-b, dag-c} -> dag-d, every node given the
// workflow's input; dag-c fails as its input's Mode says.
var (
	dagA    = task.Must[in, string]("dag-a", task.Options{})
	dagB    = task.Must[in, string]("dag-b", task.Options{})
	dagC    = task.Must[in, string]("dag-c", fastRetries)
	dagD    = task.Must[in, string]("dag-d", task.Options{})
	dagBad  = task.Must[in, bool]("dag-on-failure", task.Options{})
	dagFlow = task.Must[in, dagOut]("dag-flow", task.Options{
		Idempotency: task.Status(`"flow:" + input.id`, time.Minute),
		OnEvents:    []string{"dag.placed"},
		Workflow: &task.Workflow{
			Nodes: []task.Node{
				{Task: dagD.Definition(), Parents: []string{"dag-b", "dag-c"}},
				{Task: dagA.Definition()},
				{Task: dagB.Definition(), Parents: []string{"dag-a"}},
				{Task: dagC.Definition(), Parents: []string{"dag-a"}},
			},
			OnFailure: dagBad.Definition(),
		},
	})
)

// dagSolo is a workflow of one node, which no worker of the test handles.
var (
	dagLonely = task.Must[in, string]("dag-lonely-node", task.Options{})
	dagSolo   = task.Must[in, map[string]string]("dag-solo", task.Options{Workflow: &task.Workflow{
		Nodes:     []task.Node{{Task: dagLonely.Definition()}},
		OnFailure: dagBad.Definition(),
	}})
)

// dagOut is the workflow's output: each node's under its task's name.
type dagOut struct {
	A string `json:"dag-a"`
	B string `json:"dag-b"`
	C string `json:"dag-c"`
	D string `json:"dag-d"`
}

// dagRuns counts the attempts each node's handler made.
type dagRuns struct {
	mu sync.Mutex
	n  map[string]int
}

func (r *dagRuns) add(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[name]++
	return r.n[name]
}

func (r *dagRuns) get(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[name]
}

// handleDAG registers the workflow and its nodes on w.
func handleDAG(t *testing.T, w *worker.Worker, runs *dagRuns) {
	t.Helper()
	node := func(tk *task.Task[in, string], parents []*task.Task[in, string]) {
		err := worker.Handle(w, tk, func(ctx worker.Context, x in) (string, error) {
			n := runs.add(tk.Name())
			got := ""
			for _, p := range parents {
				o, err := worker.ParentOutput(ctx, p)
				if err != nil {
					return "", err
				}
				got += o
			}
			if tk == dagC && (x.Mode == "c-fails" || (x.Mode == "c-once" && n == 1)) {
				return "", errors.New("dag-c broke")
			}
			return got + strings.TrimPrefix(tk.Name(), "dag-"), nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	node(dagA, nil)
	node(dagB, []*task.Task[in, string]{dagA})
	node(dagC, []*task.Task[in, string]{dagA})
	node(dagD, []*task.Task[in, string]{dagB, dagC})
	if err := worker.Handle(w, dagBad, func(worker.Context, in) (bool, error) {
		runs.add(dagBad.Name())
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := worker.HandleWorkflow(w, dagFlow); err != nil {
		t.Fatal(err)
	}
}

// nodeStates maps each node of a workflow run to its status (and reason,
// after a colon, for a skipped one).
func nodeStates(t *testing.T, c *client.Client, runID string) map[string]string {
	t.Helper()
	info, err := c.Inspector().GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, n := range info.Workflow {
		s := string(n.Status)
		if n.Reason != "" {
			s += ": " + n.Reason
		}
		if (n.RunID == "") != (n.Status == "" || n.Status == client.StatusSkipped) {
			t.Errorf("node %s has run ID %q with status %q", n.Name, n.RunID, n.Status)
		}
		out[n.Name] = s
	}
	return out
}

// A diamond whose dag-c fails once and is retried: every node runs once
// but dag-c, twice; each dependant reads its parents' outputs; the
// on-failure task does not run; the workflow ends with every node's
// output; and its idempotency key dedupes a second trigger while it runs.
func TestWorkflowDiamondWithARetry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		ref, err := client.RunNoWait(ctx, c, dagFlow, in{ID: "o1", Mode: "c-once"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.RunNoWait(ctx, c, dagFlow, in{ID: "o1"})
		var col *client.IdempotencyCollisionError
		if !errors.As(err, &col) || col.ExistingRunID != ref.ID() {
			t.Fatalf("second trigger of the workflow's key = %v; want a collision with %s", err, ref.ID())
		}
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { handleDAG(t, w, runs) })
		got, err := ref.Result(ctx)
		want := dagOut{A: "a", B: "ab", C: "ac", D: "abacd"}
		if err != nil || got != want {
			t.Fatalf("workflow = %+v, %v; want %+v", got, err, want)
		}
		for name, n := range map[string]int{"dag-a": 1, "dag-b": 1, "dag-c": 2, "dag-d": 1, "dag-on-failure": 0} {
			if runs.get(name) != n {
				t.Errorf("%s ran %d times, want %d", name, runs.get(name), n)
			}
		}
		states := nodeStates(t, c, ref.ID())
		wantStates := map[string]string{"dag-a": "succeeded", "dag-b": "succeeded", "dag-c": "succeeded", "dag-d": "succeeded",
			"dag-on-failure": "skipped: no node failed"}
		if !equalMaps(states, wantStates) {
			t.Fatalf("node states = %v; want %v", states, wantStates)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		for _, n := range info.Workflow {
			order = append(order, n.Name+"@"+string(rune('0'+n.Layer)))
		}
		if got := strings.Join(order, " "); got != "dag-a@0 dag-b@1 dag-c@1 dag-d@2 dag-on-failure@3" {
			t.Fatalf("nodes in order, with layers = %s", got)
		}
		for _, n := range info.Workflow {
			if n.Name == "dag-c" {
				ci, err := c.Inspector().GetRun(ctx, n.RunID)
				if err != nil || ci.Failures != 1 || ci.Parent != ref.ID() {
					t.Fatalf("dag-c's run = %+v, %v; want one failure, the workflow as its parent", ci, err)
				}
			}
		}
	})
}

// A diamond whose dag-c fails for good: dag-d never runs and is skipped,
// dag-b runs on, the on-failure task runs once, and the workflow fails
// naming dag-c, without a retry.
func TestWorkflowNodeFailureSkipsItsDependants(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { handleDAG(t, w, runs) })
		ref, err := client.RunNoWait(ctx, c, dagFlow, in{ID: "o2", Mode: "c-fails"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = ref.Result(ctx)
		var failed *client.RunError
		if !errors.As(err, &failed) || !strings.Contains(failed.Message, "dag-c failed") {
			t.Fatalf("workflow = %v; want failed naming dag-c", err)
		}
		for name, n := range map[string]int{"dag-a": 1, "dag-b": 1, "dag-c": 3, "dag-d": 0, "dag-on-failure": 1} {
			if runs.get(name) != n {
				t.Errorf("%s ran %d times, want %d", name, runs.get(name), n)
			}
		}
		states := nodeStates(t, c, ref.ID())
		wantStates := map[string]string{"dag-a": "succeeded", "dag-b": "succeeded", "dag-c": "failed",
			"dag-d": `skipped: parent "dag-c" failed`, "dag-on-failure": "succeeded"}
		if !equalMaps(states, wantStates) {
			t.Fatalf("node states = %v; want %v", states, wantStates)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		failedAttempts := 0
		for _, a := range info.Attempts {
			if a.Outcome == client.AttemptFailed || a.Outcome == client.AttemptRetry {
				failedAttempts++
			}
		}
		if failedAttempts != 1 || info.Attempts[len(info.Attempts)-1].Outcome != client.AttemptFailed {
			t.Fatalf("workflow's attempts = %+v; want one, failed (not retried)", info.Attempts)
		}
		if runs := childRuns(t, c, dagD.Name()); len(runs) != 0 {
			t.Fatalf("dag-d has %d runs; want none", len(runs))
		}
	})
}

// An event triggers a workflow as it triggers any task, and a second
// event for the same key while it runs is deduplicated to it.
func TestWorkflowTriggeredByAnEvent(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		// A worker registers the workflow's subscription, and goes, so
		// that both events come while the workflow has not ended.
		if err := startWorker(t, b, worker.Options{}, func(w *worker.Worker) { handleDAG(t, w, runs) }).Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		ing, err := events.New(c, events.Options{Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		first, err := ing.Push(ctx, "dag.placed", json.RawMessage(`{"id":"ev"}`), nil)
		if err != nil || len(first.Runs) != 1 || first.Runs[0].Outcome != "created" {
			t.Fatalf("first event = %+v, %v", first, err)
		}
		again, err := ing.Push(ctx, "dag.placed", json.RawMessage(`{"id":"ev"}`), nil)
		if err != nil || len(again.Runs) != 1 || again.Runs[0].Outcome == "created" || again.Runs[0].RunID != first.Runs[0].RunID {
			t.Fatalf("second event = %+v, %v; want it deduplicated to %s", again, err, first.Runs[0].RunID)
		}
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { handleDAG(t, w, runs) })
		got, err := client.Ref[dagOut](c, first.Runs[0].RunID).Result(ctx)
		if err != nil || got.D != "abacd" {
			t.Fatalf("event-triggered workflow = %+v, %v", got, err)
		}
		if n := runs.get("dag-d"); n != 1 {
			t.Fatalf("dag-d ran %d times, want once", n)
		}
	})
}

// A cron schedule triggers a workflow as it triggers any task: the run of
// a tick (here fired at once with Schedules.TriggerNow, through the path a
// tick takes) runs the whole DAG, each node once.
func TestWorkflowTriggeredByASchedule(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		sched := task.Schedule{Name: "nightly-flow", Task: dagFlow.Name(), Cron: "0 3 * * *", Input: []byte(`{"id":"cron"}`)}
		startWorker(t, b, worker.Options{Schedules: []task.Schedule{sched}}, func(w *worker.Worker) { handleDAG(t, w, runs) })
		h, err := c.Schedules().TriggerNow(ctx, sched.Name)
		if err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		got, err := client.Ref[dagOut](c, h.ID()).Result(rctx)
		if err != nil || got.D != "abacd" {
			t.Fatalf("scheduled workflow = %+v, %v", got, err)
		}
		for _, n := range []string{"dag-a", "dag-b", "dag-c", "dag-d"} {
			if runs.get(n) != 1 {
				t.Fatalf("%s ran %d times, want once", n, runs.get(n))
			}
		}
	})
}

// A workflow holds no worker slot while it waits for its nodes: a worker
// with one slot runs the whole diamond, each node in the slot the
// workflow gave back when it began waiting (were it held, no node could
// run, and the workflow would not end).
func TestWorkflowWaitsWithoutASlot(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		startWorker(t, b, worker.Options{Concurrency: 1}, func(w *worker.Worker) { handleDAG(t, w, runs) })
		ref, err := client.RunNoWait(ctx, c, dagFlow, in{ID: "o3"})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ref.Result(ctx); err != nil || got.D != "abacd" {
			t.Fatalf("workflow on one slot = %+v, %v", got, err)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil || info.Attempt < 2 || info.Waits != info.Attempt-1 || info.Failures != 0 {
			t.Fatalf("workflow run = %+v, %v; want several attempts, each but the last ended waiting, none failed", info, err)
		}
	})
}

// A node cancelled from outside wakes nobody: the waiting workflow finds
// it on its own next look, skips what depends on it, runs its on-failure
// task and fails.
func TestWorkflowFindsACancelledNodeWithoutAWake(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := newClient(t, b)
		runs := &dagRuns{n: map[string]int{}}
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			_ = worker.Handle(w, dagBad, func(worker.Context, in) (bool, error) {
				runs.add(dagBad.Name())
				return true, nil
			})
			if err := worker.HandleWorkflow(w, dagSolo); err != nil {
				t.Fatal(err)
			}
		})
		ref, err := client.RunNoWait(ctx, c, dagSolo, in{ID: "solo"})
		if err != nil {
			t.Fatal(err)
		}
		var node string
		for node == "" {
			info, err := c.Inspector().GetRun(ctx, ref.ID())
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Workflow) > 0 && info.Status == client.StatusWaiting {
				node = info.Workflow[0].RunID
				continue
			}
			select {
			case <-ctx.Done():
				t.Fatalf("the workflow never waited for its node: %+v", info)
			case <-time.After(20 * time.Millisecond):
			}
		}
		if _, err := c.Handle(node).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = ref.Result(ctx)
		var failed *client.RunError
		if !errors.As(err, &failed) || !strings.Contains(failed.Message, "dag-lonely-node cancelled") {
			t.Fatalf("workflow = %v; want failed naming its cancelled node", err)
		}
		if n := runs.get(dagBad.Name()); n != 1 {
			t.Fatalf("the on-failure task ran %d times, want 1", n)
		}
	})
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// worker.WaitAll waits for a handler's children without holding its slot:
// a worker with one slot runs a parent and the children it waits for, and
// the parent's handler, run again once they have ended, spawns nothing
// twice.
func TestDurableWaitAllHoldsNoSlot(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		c := newClient(t, b)
		var ran atomic.Int64
		startWorker(t, b, worker.Options{Concurrency: 1}, func(w *worker.Worker) {
			_ = worker.Handle(w, doubleTask, func(_ worker.Context, x childIn) (int, error) {
				ran.Add(1)
				return 2 * x.N, nil
			})
			_ = worker.Handle(w, spawnParent, func(ctx worker.Context, _ in) (int, error) {
				refs, err := worker.SpawnMany(ctx, doubleTask, []childIn{{N: 1}, {N: 2}, {N: 3}})
				if err != nil {
					return 0, err
				}
				results, err := worker.WaitAll(ctx, refs)
				sum := 0
				for _, r := range results {
					sum += r
				}
				return sum, err
			})
		})
		ref, err := client.RunNoWait(ctx, c, spawnParent, in{ID: "durable-wait-all"})
		if err != nil {
			t.Fatal(err)
		}
		if sum, err := ref.Result(ctx); err != nil || sum != 12 {
			t.Fatalf("parent = %d, %v; want 12", sum, err)
		}
		if n := ran.Load(); n != 3 {
			t.Fatalf("children ran %d times, want 3", n)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil || info.Waits < 1 || len(info.Children) != 3 {
			t.Fatalf("parent = %+v, %v; want it to have waited, with 3 children", info, err)
		}
	})
}
