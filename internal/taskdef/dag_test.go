package taskdef_test

import (
	"fmt"
	"testing"

	"github.com/taskq/taskq/internal/taskdef"
)

// Node states are derived from the runs a workflow recorded: in
// topological order, each node's layer, the dependants of a failed node
// skipped (and theirs), a node whose parents are not done pending, a run
// created but gone failed, the on-failure task last.
func TestNodeStates(t *testing.T) {
	dag := taskdef.DAG{Nodes: []taskdef.DAGNode{
		{Name: "d", Parents: []string{"b", "c"}},
		{Name: "e", Parents: []string{"d"}},
		{Name: "a"},
		{Name: "b", Parents: []string{"a"}},
		{Name: "c", Parents: []string{"a"}},
		{Name: "f", Parents: []string{"b"}},
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
