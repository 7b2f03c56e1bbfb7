package taskdef

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// DAGStep is the name of the step under which a workflow run stores its
// DAG on its first attempt (see DAG): the Inspector draws the run from it,
// and a later attempt whose workflow declares another DAG is refused.
const DAGStep = "#dag"

// SkippedStatus is the state of a workflow node that will not run: a
// parent failed, was cancelled or was skipped, or the workflow ended
// before the node could start.
const SkippedStatus = "skipped"

// DAG is a workflow's nodes as a workflow run stores them (DAGStep): each
// node's child-run name is its task's name.
type DAG struct {
	Nodes     []DAGNode `json:"nodes"`
	OnFailure string    `json:"onFailure,omitempty"`
}

// DAGNode is a node of a DAG.
type DAGNode struct {
	Name    string   `json:"name"`
	Parents []string `json:"parents,omitempty"`
}

// DAGOf is w as a workflow run stores it.
func DAGOf(w *task.Workflow) DAG {
	d := DAG{Nodes: make([]DAGNode, len(w.Nodes))}
	for i, n := range w.Nodes {
		d.Nodes[i] = DAGNode{Name: n.Task.Name, Parents: n.Parents}
	}
	if w.OnFailure != nil {
		d.OnFailure = w.OnFailure.Name
	}
	return d
}

// NodeRun is what a workflow run recorded of one node's child run.
type NodeRun struct {
	RunID string
	// Status is the child's run status, "" when its run does not exist
	// (not created yet, or its record is gone).
	Status  string
	Created bool
}

// NodeState is a node's state in a workflow run.
type NodeState struct {
	Name    string
	Parents []string
	// Layer is the node's depth: 0 for a root, else one more than its
	// deepest parent. The on-failure node is one below the deepest node.
	Layer int
	RunID string
	// Status is the node's run's status; "" for a node that has not
	// started (waiting for its parents), SkippedStatus for one that will
	// not run, with Reason saying why.
	Status    string
	Reason    string
	OnFailure bool
}

// NodeStates derives each node's state, by layer and within a layer in
// the order declared (so a node comes after its parents), from the runs the
// workflow run recorded by node name; the on-failure node, if any, comes
// last. A node whose run was created but is gone counts as failed.
func NodeStates(d DAG, runs map[string]NodeRun) []NodeState {
	out := make([]NodeState, 0, len(d.Nodes)+1)
	state := make(map[string]*NodeState, len(d.Nodes))
	placed := make(map[string]bool, len(d.Nodes))
	for len(placed) < len(d.Nodes) {
		progress := false
		for _, n := range d.Nodes {
			if placed[n.Name] {
				continue
			}
			ready := true
			for _, p := range n.Parents {
				ready = ready && placed[p]
			}
			if !ready {
				continue
			}
			placed[n.Name], progress = true, true
			s := NodeState{Name: n.Name, Parents: n.Parents}
			for _, p := range n.Parents {
				ps := state[p]
				s.Layer = max(s.Layer, ps.Layer+1)
				if s.Reason == "" && (ps.Status == engine.StatusFailed || ps.Status == engine.StatusCancelled || ps.Status == SkippedStatus) {
					s.Reason = fmt.Sprintf("parent %q %s", p, ps.Status)
				}
			}
			r, ok := runs[n.Name]
			switch {
			case ok && r.Status != "":
				s.RunID, s.Status = r.RunID, r.Status
			case ok && r.Created:
				s.RunID, s.Status, s.Reason = r.RunID, engine.StatusFailed, "its run's record is gone"
			case s.Reason != "":
				s.Status = SkippedStatus
			case ok:
				s.RunID = r.RunID
			}
			if s.Status != SkippedStatus && s.Reason != "" && s.Status != engine.StatusFailed {
				s.Reason = ""
			}
			out = append(out, s)
			state[n.Name] = &out[len(out)-1]
		}
		if !progress {
			break // a cycle: task.Workflow refuses one
		}
	}
	// By layer, each in the order declared: parents still come first.
	decl := make(map[string]int, len(d.Nodes))
	for i, n := range d.Nodes {
		decl[n.Name] = i
	}
	slices.SortStableFunc(out, func(a, b NodeState) int {
		return cmp.Or(cmp.Compare(a.Layer, b.Layer), cmp.Compare(decl[a.Name], decl[b.Name]))
	})
	if d.OnFailure != "" {
		s := NodeState{Name: d.OnFailure, OnFailure: true}
		for _, n := range out {
			s.Layer = max(s.Layer, n.Layer+1)
		}
		if r, ok := runs[d.OnFailure]; ok {
			s.RunID, s.Status = r.RunID, r.Status
		}
		out = append(out, s)
	}
	return out
}
