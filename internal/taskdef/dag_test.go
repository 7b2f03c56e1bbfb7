package taskdef_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// Node states are derived from the runs a workflow recorded: in
// topological order (by layer, then name, whatever the order declared),
// each node's layer, the dependants of a failed node
// skipped (and theirs), a node whose parents are not done pending, a run
// created but gone failed, the on-failure task last.
func TestNodeStates(t *testing.T) {
	dag := taskdef.DAG{Nodes: []taskdef.DAGNode{
		{Name: "d", Parents: []string{"b", "c"}},
		{Name: "e", Parents: []string{"d"}},
		{Name: "a"},
		{Name: "f", Parents: []string{"b"}},
		{Name: "c", Parents: []string{"a"}},
		{Name: "b", Parents: []string{"a"}},
	}, OnFailure: "undo"}
	for _, tc := range []struct {
		name string
		runs map[string]taskdef.NodeRun
		want string
	}{
		{"nothing started", nil,
			"a@0: b@1: c@1: d@2: f@2: e@3: undo@4:"},
		{"c failed, b running", map[string]taskdef.NodeRun{
			"a": {RunID: "ra", Status: "succeeded", Created: true}, "b": {RunID: "rb", Status: "running", Created: true},
			"c": {RunID: "rc", Status: "failed", Created: true}},
			`a@0:succeeded b@1:running c@1:failed d@2:skipped(parent "c" failed) f@2: e@3:skipped(parent "d" skipped) undo@4:`},
		{"a's run is gone, b recorded only", map[string]taskdef.NodeRun{
			"a": {RunID: "ra", Created: true}, "b": {RunID: "rb"}, "undo": {RunID: "ru", Status: "queued", Created: true}},
			`a@0:failed(its run's record is gone) b@1:skipped(parent "a" failed) c@1:skipped(parent "a" failed) d@2:skipped(parent "b" skipped) f@2:skipped(parent "b" skipped) e@3:skipped(parent "d" skipped) undo@4:queued`},
	} {
		got := ""
		for i, s := range taskdef.NodeStates(dag, tc.runs) {
			if i > 0 {
				got += " "
			}
			got += fmt.Sprintf("%s@%d:%s", s.Name, s.Layer, s.Status)
			if s.Reason != "" {
				got += "(" + s.Reason + ")"
			}
			if (s.RunID != "") != (tc.runs[s.Name].RunID != "" && s.Status != taskdef.SkippedStatus) {
				t.Errorf("%s: node %s has run ID %q", tc.name, s.Name, s.RunID)
			}
		}
		if got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// A workflow's DAG rebuilt from its registered spec, whose nodes are a map,
// gives the same node states, in the same order, as the DAG its runs store.
func TestSpecDAGGivesTheStoredDAGsNodeStates(t *testing.T) {
	def := func(name string, w *task.Workflow) *task.Definition {
		d, err := task.NewDefinition(name, task.Options{Workflow: w})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b, c, d, undo := def("a", nil), def("b", nil), def("c", nil), def("d", nil), def("undo", nil)
	flow := def("flow", &task.Workflow{Nodes: []task.Node{
		{Task: d, Parents: []string{"c", "b"}},
		{Task: c, Parents: []string{"a"}},
		{Task: a},
		{Task: b, Parents: []string{"a"}},
	}, OnFailure: undo})
	spec, ok := taskdef.SpecDAG(taskdef.Spec(flow))
	if !ok {
		t.Fatal("a workflow's spec has no DAG")
	}
	runs := map[string]taskdef.NodeRun{"a": {RunID: "ra", Status: "succeeded", Created: true}, "c": {RunID: "rc", Status: "failed", Created: true}}
	got, want := taskdef.NodeStates(spec, runs), taskdef.NodeStates(taskdef.DAGOf(flow.Workflow), runs)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("from the spec:\n%+v\nfrom the stored DAG:\n%+v", got, want)
	}
	if _, ok := taskdef.SpecDAG(taskdef.Spec(a)); ok {
		t.Fatal("a task that is no workflow has a DAG")
	}
}
