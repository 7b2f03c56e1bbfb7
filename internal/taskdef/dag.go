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

// DAGOf is w as a workflow run stores it, its nodes in the order
// declared: a run's later attempts compare the bytes with those stored,
// so the order must stay as it is.
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

// SpecDAG is the DAG of the workflow s registers (s.DAG and s.OnFailure),
// its nodes by name, as the map has no order; ok is false when s is not a
// workflow's. NodeStates orders the nodes the same whether they came from
// here or from DAGOf.
func SpecDAG(s task.Spec) (d DAG, ok bool) {
	if len(s.DAG) == 0 {
		return DAG{}, false
	}
	d = DAG{Nodes: make([]DAGNode, 0, len(s.DAG)), OnFailure: s.OnFailure}
	for name, parents := range s.DAG {
		n := DAGNode{Name: name}
		if len(parents) > 0 { // as a stored DAG decodes a root: no parents, nil
			n.Parents = slices.Clone(parents)
		}
		d.Nodes = append(d.Nodes, n)
	}
	slices.SortFunc(d.Nodes, func(a, b DAGNode) int { return cmp.Compare(a.Name, b.Name) })
	return d, true
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

// NodeStates derives each node's state, by layer (so a node comes after
// its parents) and within a layer by name, from the runs the workflow run
// recorded by node name; the on-failure node, if any, comes last. A node
// whose run was created but is gone counts as failed. The order depends on
// the DAG's nodes and parents only, not on the order d lists them in, so a
// DAG from SpecDAG and the same workflow's from DAGOf give the same.
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
	// By layer, then name: parents still come first, and the order is
	// the same however the nodes were listed (a registered spec's DAG is a
	// map).
	slices.SortFunc(out, func(a, b NodeState) int {
		return cmp.Or(cmp.Compare(a.Layer, b.Layer), cmp.Compare(a.Name, b.Name))
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
