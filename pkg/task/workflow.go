package task

import (
	"fmt"
	"slices"
)

// WorkflowNodesMax bounds the nodes of a workflow.
const WorkflowNodesMax = 100

// Workflow declares a task as a workflow: a DAG of tasks (Nodes) that
// taskq runs for each run of the workflow's task, every node a child run
// of it (see worker.HandleWorkflow). Every node receives the workflow
// run's input and metadata, so each node's input type must decode the
// workflow's input; a node starts once each of its parents has succeeded,
// and reads their outputs with worker.ParentOutput. The workflow's run
// holds its idempotency key for the whole workflow, so its strategy and
// conflict policy apply to the workflow as one; events (OnEvents) and
// schedules trigger it as they trigger any task.
//
// A node that fails after its retries (or is cancelled) fails its
// dependants, which never run and show as skipped; the nodes that do not
// depend on it run on. Once nothing more can start and every node started
// has ended, OnFailure (if set) runs once, with the workflow's input, and
// the workflow fails. A workflow whose nodes all succeed ends with a JSON
// object holding each node's output under its task's name.
type Workflow struct {
	// Nodes are the workflow's tasks, each once, in any order.
	Nodes []Node
	// OnFailure, when set, runs once after a node failed, before the
	// workflow ends failed. It is not one of Nodes.
	OnFailure *Definition
}

// Node is one task of a Workflow and the tasks it waits for.
type Node struct {
	Task *Definition
	// Parents are the names of the nodes that must succeed before this
	// one starts; none for a root.
	Parents []string
}

// checkWorkflow validates a workflow declared on task name and returns a
// copy of it, its nodes in the order they were given.
func checkWorkflow(name string, w *Workflow) (*Workflow, error) {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Task: name, Field: field, Message: fmt.Sprintf(format, args...)}
	}
	if len(w.Nodes) == 0 {
		return nil, bad("workflow.nodes", "a workflow needs at least one node")
	}
	if len(w.Nodes) > WorkflowNodesMax {
		return nil, bad("workflow.nodes", "%d nodes is more than %d", len(w.Nodes), WorkflowNodesMax)
	}
	out := &Workflow{Nodes: make([]Node, len(w.Nodes)), OnFailure: w.OnFailure}
	index := make(map[string]int, len(w.Nodes))
	for i, n := range w.Nodes {
		field := fmt.Sprintf("workflow.nodes[%d]", i)
		switch {
		case n.Task == nil:
			return nil, bad(field, "has no task")
		case n.Task.Name == name:
			return nil, bad(field, "task %q is the workflow itself", name)
		}
		if _, dup := index[n.Task.Name]; dup {
			return nil, bad(field, "task %q is a node twice", n.Task.Name)
		}
		index[n.Task.Name] = i
		out.Nodes[i] = Node{Task: n.Task, Parents: slices.Clone(n.Parents)}
	}
	for i, n := range out.Nodes {
		seen := map[string]bool{}
		for j, p := range n.Parents {
			field := fmt.Sprintf("workflow.nodes[%d].parents[%d]", i, j)
			if _, ok := index[p]; !ok {
				return nil, bad(field, "%q is not a node of the workflow", p)
			}
			if p == n.Task.Name {
				return nil, bad(field, "node %q is its own parent", p)
			}
			if seen[p] {
				return nil, bad(field, "%q is a parent of %q twice", p, n.Task.Name)
			}
			seen[p] = true
		}
	}
	// A cycle leaves nodes whose parents never all come first.
	done := make(map[string]bool, len(out.Nodes))
	for range out.Nodes {
		progress := false
		for _, n := range out.Nodes {
			if done[n.Task.Name] {
				continue
			}
			ready := true
			for _, p := range n.Parents {
				ready = ready && done[p]
			}
			if ready {
				done[n.Task.Name], progress = true, true
			}
		}
		if !progress {
			break
		}
	}
	if len(done) < len(out.Nodes) {
		var cyc []string
		for _, n := range out.Nodes {
			if !done[n.Task.Name] {
				cyc = append(cyc, n.Task.Name)
			}
		}
		return nil, bad("workflow.nodes", "the parents of %q form a cycle", cyc)
	}
	if f := out.OnFailure; f != nil {
		if _, ok := index[f.Name]; ok || f.Name == name {
			return nil, bad("workflow.on_failure", "task %q is a node of the workflow or the workflow itself", f.Name)
		}
	}
	return out, nil
}
