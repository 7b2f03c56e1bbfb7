package task_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/taskq/taskq/pkg/task"
)

// A workflow's DAG is checked when its task is defined: each problem is a
// *ConfigError naming the field and the node.
func TestWorkflowIsChecked(t *testing.T) {
	a := task.Must[struct{}, int]("wf-a", task.Options{}).Definition()
	b := task.Must[struct{}, int]("wf-b", task.Options{}).Definition()
	c := task.Must[struct{}, int]("wf-c", task.Options{}).Definition()
	cases := []struct {
		name  string
		w     task.Workflow
		field string
		msg   string
	}{
		{"empty", task.Workflow{}, "workflow.nodes", "at least one node"},
		{"no task", task.Workflow{Nodes: []task.Node{{}}}, "workflow.nodes[0]", "has no task"},
		{"twice", task.Workflow{Nodes: []task.Node{{Task: a}, {Task: a}}}, "workflow.nodes[1]", `"wf-a" is a node twice`},
		{"unknown parent", task.Workflow{Nodes: []task.Node{{Task: a, Parents: []string{"wf-x"}}}},
			"workflow.nodes[0].parents[0]", `"wf-x" is not a node`},
		{"own parent", task.Workflow{Nodes: []task.Node{{Task: a, Parents: []string{"wf-a"}}}},
			"workflow.nodes[0].parents[0]", "its own parent"},
		{"cycle", task.Workflow{Nodes: []task.Node{{Task: a}, {Task: b, Parents: []string{"wf-c"}}, {Task: c, Parents: []string{"wf-b"}}}},
			"workflow.nodes", `["wf-b" "wf-c"] form a cycle`},
		{"on-failure a node", task.Workflow{Nodes: []task.Node{{Task: a}}, OnFailure: a}, "workflow.on_failure", `"wf-a" is a node`},
		{"itself", task.Workflow{Nodes: []task.Node{{Task: a}, {Task: &task.Definition{Name: "wf"}}}}, "workflow.nodes[1]", "the workflow itself"},
	}
	for _, tc := range cases {
		w := tc.w
		_, err := task.New[struct{}, int]("wf", task.Options{Workflow: &w})
		var ce *task.ConfigError
		if !errors.As(err, &ce) || !errors.Is(err, task.ErrInvalidConfig) || ce.Field != tc.field || !strings.Contains(ce.Message, tc.msg) {
			t.Errorf("%s: err = %v; want field %s, %q", tc.name, err, tc.field, tc.msg)
		}
	}
	w := &task.Workflow{Nodes: []task.Node{{Task: b, Parents: []string{"wf-a"}}, {Task: a}}, OnFailure: c}
	d, err := task.New[struct{}, int]("wf", task.Options{Workflow: w})
	if err != nil {
		t.Fatal(err)
	}
	w.Nodes[0].Parents[0] = "changed"
	if got := d.Definition().Workflow.Nodes[0].Parents[0]; got != "wf-a" {
		t.Fatalf("definition's node parent = %q after the caller changed its own; want a copy", got)
	}
}
