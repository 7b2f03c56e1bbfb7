package worker_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// The fault test's diamond: fault-dag-a -> {fault-dag-b, fault-dag-c} ->
// fault-dag-d; fault-dag-b waits for the gate key.
var (
	faultDagA    = task.Must[in, string]("fault-dag-a", task.Options{})
	faultDagB    = task.Must[in, string]("fault-dag-b", task.Options{})
	faultDagC    = task.Must[in, string]("fault-dag-c", task.Options{})
	faultDagD    = task.Must[in, string]("fault-dag-d", task.Options{})
	faultDagFlow = task.Must[in, map[string]string]("fault-dag", task.Options{
		Idempotency: task.Status(`"dag:" + input.id`, time.Hour),
		Workflow: &task.Workflow{Nodes: []task.Node{
			{Task: faultDagA.Definition()},
			{Task: faultDagB.Definition(), Parents: []string{"fault-dag-a"}},
			{Task: faultDagC.Definition(), Parents: []string{"fault-dag-a"}},
			{Task: faultDagD.Definition(), Parents: []string{"fault-dag-b", "fault-dag-c"}},
		}},
	})
)

// dagWorker is a worker process (see TestMain) that runs the fault test's
// workflow and its nodes, printing "node <name> <attempt>" as each node
// begins; fault-dag-b then waits for the gate key.
func dagWorker() int {
	conn, err := connect.Open(connect.Options{URL: os.Getenv(workerURLEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rdb, ns := conn.Redis, os.Getenv(workerNSEnv)
	w, err := worker.New(worker.Options{Redis: rdb, Namespace: ns, LeaseDuration: time.Second, Concurrency: 1, Logger: quiet,
		FetchBlock: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, tk := range []*task.Task[in, string]{faultDagA, faultDagB, faultDagC, faultDagD} {
		_ = worker.Handle(w, tk, func(ctx worker.Context, x in) (string, error) {
			fmt.Printf("node %s %d\n", tk.Name(), ctx.Attempt())
			for tk == faultDagB {
				if n, err := rdb.Exists(ctx, gateKey(ns)).Result(); err == nil && n == 1 {
					break
				}
				select {
				case <-ctx.Done():
					return "", context.Cause(ctx)
				case <-time.After(20 * time.Millisecond):
				}
			}
			return tk.Name() + ":" + x.ID, nil
		})
	}
	if err := worker.HandleWorkflow(w, faultDagFlow); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A worker process SIGKILLed while a workflow's node runs (the workflow
// waiting for it): another worker takes the node over once its lease
// lapses, and the workflow goes on from where it was. Every node has one
// run, which succeeded; the workflow ends once, with every node's output.
func TestWorkflowSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		first := startHelperWorker(t, "dag", b)
		ref, err := client.RunNoWait(ctx, c, faultDagFlow, in{ID: "k"})
		if err != nil {
			t.Fatal(err)
		}
		first.nextLine("node fault-dag-b")
		first.Kill()

		if err := b.Client.Set(ctx, gateKey(b.Namespace), "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		second := startHelperWorker(t, "dag", b)
		if l := second.nextLine("node fault-dag-b"); l[2] == "1" {
			t.Fatalf("second worker ran fault-dag-b as attempt %s; want it redelivered", l[2])
		}
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		got, err := ref.Result(wctx)
		if err != nil || len(got) != 4 || got["fault-dag-d"] != "fault-dag-d:k" || got["fault-dag-b"] != "fault-dag-b:k" {
			t.Fatalf("workflow = %v, %v", got, err)
		}
		for _, name := range []string{faultDagA.Name(), faultDagB.Name(), faultDagC.Name(), faultDagD.Name(), faultDagFlow.Name()} {
			runs := childRuns(t, c, name)
			if len(runs) != 1 || runs[0].Status != client.StatusSucceeded {
				t.Fatalf("%s has %d runs (%+v); want one, succeeded", name, len(runs), runs)
			}
			if name != faultDagFlow.Name() && runs[0].Parent != ref.ID() {
				t.Fatalf("%s's run has parent %q; want the workflow %s", name, runs[0].Parent, ref.ID())
			}
		}
		states := nodeStates(t, c, ref.ID())
		for _, name := range []string{"fault-dag-a", "fault-dag-b", "fault-dag-c", "fault-dag-d"} {
			if states[name] != "succeeded" {
				t.Fatalf("node states = %v", states)
			}
		}
	})
}
