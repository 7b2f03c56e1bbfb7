package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A run spawned by another names its parent over HTTP, and the parent
// lists it among its children, each answer validated against the
// contract.
func TestRunParentAndChildrenOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "family-http", task.Options{})
		e.register(taskdef.Spec(def))
		parent := e.call(http.MethodPost, "/api/v1/tasks/family-http/runs", map[string]any{"input": map[string]any{}}).
			expect(t, http.StatusCreated).str("runId")
		ids, err := clientlink.Of(e.c).Spawn(context.Background(), clientlink.SpawnRequest{Def: def, Parent: parent,
			Inputs: [][]byte{[]byte(`{}`), []byte(`{}`)}, Many: true, Options: []any{client.ChildName("part"), client.Detached()}})
		if err != nil {
			t.Fatal(err)
		}
		r := e.call(http.MethodGet, "/api/v1/runs/"+parent, nil).expect(t, http.StatusOK)
		kids, _ := r.body["children"].([]any)
		if len(kids) != 2 {
			t.Fatalf("parent: %s", r.raw)
		}
		for i, k := range kids {
			m := k.(map[string]any)
			if m["runId"] != ids[i] || m["name"] != []string{"part#0", "part#1"}[i] || m["status"] != "queued" ||
				m["detached"] != true || m["task"] != "family-http" {
				t.Fatalf("child %d: %v", i, m)
			}
		}
		if _, ok := r.body["parent"]; ok {
			t.Fatalf("the parent has a parent: %s", r.raw)
		}
		c := e.call(http.MethodGet, "/api/v1/runs/"+ids[0], nil).expect(t, http.StatusOK)
		if c.str("parent") != parent {
			t.Fatalf("child: %s", c.raw)
		}
		list := e.call(http.MethodGet, "/api/v1/runs?task=family-http", nil).expect(t, http.StatusOK)
		parents := 0
		for _, item := range list.body["runs"].([]any) {
			if item.(map[string]any)["parent"] == parent {
				parents++
			}
		}
		if parents != 2 {
			t.Fatalf("listing names the parent of %d runs, want 2: %s", parents, list.raw)
		}
	})
}

// A workflow run lists its nodes over HTTP, each with its state, the
// answer validated against the contract.
func TestWorkflowNodesOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "flow-http", task.Options{})
		e.register(taskdef.Spec(def))
		wf := e.call(http.MethodPost, "/api/v1/tasks/flow-http/runs", map[string]any{"input": map[string]any{}}).
			expect(t, http.StatusCreated).str("runId")
		link := clientlink.Of(e.c)
		ctx := context.Background()
		dag := `{"nodes":[{"name":"first"},{"name":"second","parents":["first"]}]}`
		if _, err := link.Engine.SaveStepResult(ctx, wf, taskdef.DAGStep, []byte(dag)); err != nil {
			t.Fatal(err)
		}
		ids, err := link.Spawn(ctx, clientlink.SpawnRequest{Def: def, Parent: wf, Inputs: [][]byte{[]byte(`{}`)},
			Options: []any{client.ChildName("first")}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.c.Handle(ids[0]).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		r := e.call(http.MethodGet, "/api/v1/runs/"+wf, nil).expect(t, http.StatusOK)
		nodes, _ := r.body["workflow"].([]any)
		if len(nodes) != 2 {
			t.Fatalf("workflow run: %s", r.raw)
		}
		first, second := nodes[0].(map[string]any), nodes[1].(map[string]any)
		if first["name"] != "first" || first["runId"] != ids[0] || first["status"] != "cancelled" || first["layer"] != 0.0 ||
			second["name"] != "second" || second["status"] != "skipped" || second["reason"] != `parent "first" cancelled` ||
			second["layer"] != 1.0 || second["runId"] != nil {
			t.Fatalf("nodes: %v", nodes)
		}
	})
}

// A workflow's task lists its DAG among its registered settings.
func TestWorkflowTaskOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		first, second, undo := mustDef(t, "first", task.Options{}), mustDef(t, "second", task.Options{}), mustDef(t, "undo", task.Options{})
		wf := mustDef(t, "flow", task.Options{Workflow: &task.Workflow{
			Nodes:     []task.Node{{Task: first}, {Task: second, Parents: []string{"first"}}},
			OnFailure: undo,
		}})
		e.register(taskdef.Spec(wf))
		r := e.call(http.MethodGet, "/api/v1/tasks", nil).expect(t, http.StatusOK)
		tasks, _ := r.body["tasks"].([]any)
		if len(tasks) != 1 {
			t.Fatalf("tasks: %s", r.raw)
		}
		spec, _ := tasks[0].(map[string]any)["spec"].(map[string]any)
		dag, _ := spec["dag"].(map[string]any)
		if len(dag) != 2 || len(dag["first"].([]any)) != 0 || dag["second"].([]any)[0] != "first" || spec["onFailure"] != "undo" {
			t.Fatalf("workflow task: %s", r.raw)
		}
	})
}

// A workflow run that no worker has begun has its task's registered DAG
// on GET /api/v1/runs/{id}, every node waiting, by layer then name.
func TestQueuedWorkflowRunOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		first, second, third, undo := mustDef(t, "first", task.Options{}), mustDef(t, "second", task.Options{}),
			mustDef(t, "third", task.Options{}), mustDef(t, "undo", task.Options{})
		wf := mustDef(t, "flow", task.Options{Workflow: &task.Workflow{
			Nodes:     []task.Node{{Task: third, Parents: []string{"first"}}, {Task: second, Parents: []string{"first"}}, {Task: first}},
			OnFailure: undo,
		}})
		e.register(taskdef.Spec(wf))
		id := e.call(http.MethodPost, "/api/v1/tasks/flow/runs", map[string]any{"input": map[string]any{}}).
			expect(t, http.StatusCreated).str("runId")
		r := e.call(http.MethodGet, "/api/v1/runs/"+id, nil).expect(t, http.StatusOK)
		nodes, _ := r.body["workflow"].([]any)
		want := []string{"first@0", "second@1<first", "third@1<first", "undo@2!"}
		if len(nodes) != len(want) {
			t.Fatalf("queued workflow run: %s", r.raw)
		}
		for i, n := range nodes {
			m := n.(map[string]any)
			got := fmt.Sprintf("%s@%v", m["name"], m["layer"])
			if ps, _ := m["parents"].([]any); len(ps) > 0 {
				got += fmt.Sprintf("<%s", ps[0])
			}
			if m["onFailure"] == true {
				got += "!"
			}
			_, status := m["status"]
			_, run := m["runId"]
			if got != want[i] || status || run {
				t.Fatalf("node %d = %v; want %s, waiting: %s", i, m, want[i], r.raw)
			}
		}
	})
}
