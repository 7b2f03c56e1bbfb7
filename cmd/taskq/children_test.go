package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
)

// spawnLease spawns, as a handler of parent would, a lease child named
// name.
func spawnLease(t *testing.T, c *client.Client, parent, name, id string) string {
	t.Helper()
	ids, err := clientlink.Of(c).Spawn(context.Background(), clientlink.SpawnRequest{Def: leaseTask.Definition(), Parent: parent,
		Inputs: [][]byte{[]byte(`{"id":"` + id + `"}`)}, Options: []any{client.ChildName(name)}})
	if err != nil {
		t.Fatal(err)
	}
	return ids[0]
}

// runs get shows a run's parent, and its children in a table; -o json
// has them as the HTTP API does.
func TestRunsGetShowsParentAndChildren(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		parent := triggerLease(t, c, "p")
		child := spawnLease(t, c, parent, "welcome", "c")
		r := cl.run("runs", "get", parent)
		out := strings.Join(strings.Fields(r.stdout), " ")
		if r.code != exitOK || !strings.Contains(out, "Children: 1") || !strings.Contains(out, "NAME RUN TASK STATUS welcome "+child+" lease queued") {
			t.Fatalf("runs get of the parent: exit %d\n%s", r.code, r.stdout)
		}
		r = cl.run("runs", "get", child)
		if out := strings.Join(strings.Fields(r.stdout), " "); !strings.Contains(out, "Parent: "+parent) ||
			!strings.Contains(out, "Key: taskq:child:"+parent+"/welcome/lease:c") {
			t.Fatalf("runs get of the child:\n%s", r.stdout)
		}
		r = cl.run("runs", "get", parent, "-o", "json")
		var v client.RunInfo
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Children) != 1 || v.Children[0].RunID != child ||
			v.Children[0].Name != "welcome" || v.Children[0].Status != client.StatusQueued {
			t.Fatalf("runs get -o json: %v\n%s", err, r.stdout)
		}
	})
}

// runs get of a workflow run lists its nodes by layer, each with its
// state; -o json has them as the HTTP API does.
func TestRunsGetShowsAWorkflowsNodes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		wf := triggerLease(t, c, "wf")
		// As the workflow's handler does on its first attempt: the DAG,
		// then its root node.
		dag := `{"nodes":[{"name":"first"},{"name":"second","parents":["first"]}],"onFailure":"undo"}`
		if _, err := clientlink.Of(c).Engine.SaveStepResult(ctx, wf, taskdef.DAGStep, []byte(dag)); err != nil {
			t.Fatal(err)
		}
		first := spawnLease(t, c, wf, "first", "n1")
		r := cl.run("runs", "get", wf)
		out := strings.Join(strings.Fields(r.stdout), " ")
		if want := "LAYER NODE AFTER STATUS RUN REASON 0 first queued " + first + " 1 second first pending 2 undo (on failure) pending"; r.code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("runs get of the workflow: exit %d\n%s\nwant %s", r.code, r.stdout, want)
		}
		r = cl.run("runs", "get", wf, "-o", "json")
		var v client.RunInfo
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || len(v.Workflow) != 3 || v.Workflow[0].RunID != first ||
			v.Workflow[1].Status != "" || v.Workflow[1].Parents[0] != "first" || !v.Workflow[2].OnFailure {
			t.Fatalf("runs get -o json: %v\n%s", err, r.stdout)
		}
	})
}
