package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// wfqFlow is a diamond, wfq-reserve -> {wfq-charge, wfq-pack} -> wfq-ship,
// with wfq-release on failure, its nodes declared in neither topological
// nor name order. No worker of these tests handles its nodes.
var (
	wfqReserve = task.Must[orderInput, string]("wfq-reserve", task.Options{})
	wfqCharge  = task.Must[orderInput, string]("wfq-charge", task.Options{})
	wfqPack    = task.Must[orderInput, string]("wfq-pack", task.Options{})
	wfqShip    = task.Must[orderInput, string]("wfq-ship", task.Options{})
	wfqRelease = task.Must[orderInput, string]("wfq-release", task.Options{})
	wfqFlow    = task.Must[orderInput, map[string]json.RawMessage]("wfq-flow", task.Options{Workflow: &task.Workflow{
		Nodes: []task.Node{
			{Task: wfqShip.Definition(), Parents: []string{"wfq-pack", "wfq-charge"}},
			{Task: wfqPack.Definition(), Parents: []string{"wfq-reserve"}},
			{Task: wfqReserve.Definition()},
			{Task: wfqCharge.Definition(), Parents: []string{"wfq-reserve"}},
		},
		OnFailure: wfqRelease.Definition(),
	}})
)

// wfqShape is the diamond's nodes as GetRun lists them, without their
// states: by layer, then name; the on-failure task last.
const wfqShape = "wfq-reserve@0 wfq-charge@1<wfq-reserve wfq-pack@1<wfq-reserve wfq-ship@2<wfq-pack,wfq-charge wfq-release@3!"

// shape is a workflow run's nodes, each with its layer, its parents after
// "<", and "!" for the on-failure task.
func shape(nodes []client.WorkflowNode) string {
	parts := make([]string, len(nodes))
	for i, n := range nodes {
		parts[i] = fmt.Sprintf("%s@%d", n.Name, n.Layer)
		if len(n.Parents) > 0 {
			parts[i] += "<" + strings.Join(n.Parents, ",")
		}
		if n.OnFailure {
			parts[i] += "!"
		}
	}
	return strings.Join(parts, " ")
}

func getRun(t *testing.T, c *client.Client, id string) *client.RunInfo {
	t.Helper()
	info, err := c.Inspector().GetRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// A workflow run that has not begun shows its task's DAG as registered,
// every node waiting, once a worker has registered the task (none before);
// after its first attempt stored its DAG it shows the same nodes in the
// same order, its root started.
func TestWorkflowQueuedRunShowsItsDAG(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		ref, err := client.RunNoWait(ctx, c, wfqFlow, orderInput{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		if info := getRun(t, c, ref.ID()); len(info.Workflow) != 0 {
			t.Fatalf("a workflow no worker registered shows nodes: %+v", info.Workflow)
		}

		registerDef(t, c, wfqFlow.Definition())
		info := getRun(t, c, ref.ID())
		if info.Status != client.StatusQueued || len(info.Attempts) != 0 {
			t.Fatalf("run = %s with attempts %+v; want queued, none begun", info.Status, info.Attempts)
		}
		if got := shape(info.Workflow); got != wfqShape {
			t.Fatalf("queued workflow's nodes:\n got %s\nwant %s", got, wfqShape)
		}
		for _, n := range info.Workflow {
			if n.Status != "" || n.RunID != "" || n.Reason != "" {
				t.Errorf("queued workflow's node %s = %q %q (%s); want waiting, no run", n.Name, n.Status, n.Reason, n.RunID)
			}
		}

		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := worker.HandleWorkflow(w, wfqFlow); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
		waitFor(t, "the workflow to wait for its root", func() bool {
			info = getRun(t, c, ref.ID())
			return info.Status == client.StatusWaiting
		})
		if info.StepCount == 0 {
			t.Fatalf("the waiting workflow stored no DAG: %+v", info)
		}
		if got := shape(info.Workflow); got != wfqShape {
			t.Fatalf("started workflow's nodes:\n got %s\nwant %s", got, wfqShape)
		}
		for _, n := range info.Workflow {
			started := n.Name == wfqReserve.Name()
			if started != (n.RunID != "") || (started && n.Status != client.StatusQueued) || (!started && n.Status != "") {
				t.Errorf("started workflow's node %s = %q (%s); want only wfq-reserve started, queued", n.Name, n.Status, n.RunID)
			}
		}
	})
}

// A workflow run cancelled before it began shows every node of its
// registered DAG skipped, as the workflow was cancelled.
func TestWorkflowCancelledBeforeItStartedShowsEveryNodeSkipped(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		registerDef(t, c, wfqFlow.Definition())
		ref, err := client.RunNoWait(ctx, c, wfqFlow, orderInput{ID: "2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Handle(ref.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		info := getRun(t, c, ref.ID())
		if info.Status != client.StatusCancelled {
			t.Fatalf("run = %s; want cancelled", info.Status)
		}
		if got := shape(info.Workflow); got != wfqShape {
			t.Fatalf("cancelled workflow's nodes:\n got %s\nwant %s", got, wfqShape)
		}
		for _, n := range info.Workflow {
			if n.Status != client.StatusSkipped || n.Reason != "the workflow was cancelled" || n.RunID != "" {
				t.Errorf("cancelled workflow's node %s = %q %q (%s); want skipped as the workflow was cancelled", n.Name, n.Status, n.Reason, n.RunID)
			}
		}
	})
}
