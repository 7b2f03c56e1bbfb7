package client

import (
	"context"
	"encoding/json"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// StatusSkipped is the state of a workflow node (WorkflowNode) that will
// not run: a parent failed, was cancelled or was skipped, or the workflow
// run ended before the node could start. No run has it.
const StatusSkipped Status = taskdef.SkippedStatus

// WorkflowNode is one node of a workflow run (task.Workflow) and its
// state, as RunInfo.Workflow lists them.
type WorkflowNode struct {
	// Name is the node's task, and its name among the run's children.
	Name    string   `json:"name"`
	Parents []string `json:"parents,omitempty"`
	// Layer is the node's depth in the DAG: 0 for a root, else one more
	// than its deepest parent; the on-failure task is below every node.
	Layer int `json:"layer"`
	// RunID is the node's run, "" for a node that has not started.
	RunID string `json:"runId,omitempty"`
	// Status is the node's run's status; "" for a node waiting for its
	// parents, StatusSkipped for one that will not run, with Reason
	// saying why (for example `parent "charge" failed`).
	Status Status `json:"status,omitempty"`
	Reason string `json:"reason,omitempty"`
	// OnFailure marks the workflow's on-failure task, which runs only
	// when a node failed.
	OnFailure bool `json:"onFailure,omitempty"`
}

// withWorkflow sets info.Workflow for a workflow run, from the DAG it
// stored on its first attempt and its children: one more read for a run
// with durable steps, none for others. A run that has begun no attempt
// (queued, or cancelled before it started) has stored none: its DAG is
// its task's as registered (reg), every node waiting, or skipped if the
// run has ended; a task no worker has registered (reg nil) shows none.
func (in *Inspector) withWorkflow(ctx context.Context, info *RunInfo, r *engine.Run, reg *task.Registered) error {
	var dag taskdef.DAG
	switch {
	case r.HasSteps:
		raw, ok, err := in.c.store.StepResult(ctx, r.ID, taskdef.DAGStep)
		if err != nil {
			return in.c.unavailable(ctx, err)
		}
		// A DAG that cannot be read leaves the run shown without it: its
		// own handler refuses it on the run's next attempt.
		if dag, ok = decodeDAG(raw, ok); !ok {
			return nil
		}
	case r.Attempt == 0 && reg != nil:
		var ok bool
		if dag, ok = taskdef.SpecDAG(reg.Spec); !ok {
			return nil
		}
	default:
		return nil
	}
	runs := make(map[string]taskdef.NodeRun, len(info.Children))
	for _, c := range info.Children {
		runs[c.Name] = taskdef.NodeRun{RunID: c.RunID, Status: string(c.Status), Created: c.Status != ""}
	}
	for _, s := range taskdef.NodeStates(dag, runs) {
		n := WorkflowNode{Name: s.Name, Parents: s.Parents, Layer: s.Layer, RunID: s.RunID, Status: Status(s.Status),
			Reason: s.Reason, OnFailure: s.OnFailure}
		if n.Status == "" && info.Status.Terminal() {
			n.Status = StatusSkipped
			switch {
			case n.OnFailure && info.Status == StatusSucceeded:
				n.Reason = "no node failed"
			case info.Status == StatusCancelled:
				n.Reason = "the workflow was cancelled"
			default:
				n.Reason = "the workflow ended"
			}
		}
		info.Workflow = append(info.Workflow, n)
	}
	return nil
}

// decodeDAG decodes a workflow run's stored DAG; ok is false when there is
// none (found false) or it cannot be read.
func decodeDAG(raw []byte, found bool) (dag taskdef.DAG, ok bool) {
	return dag, found && json.Unmarshal(raw, &dag) == nil
}
