package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// HandleWorkflow registers taskq's own handler for t, a task declared with
// task.Options.Workflow: each run of t runs the workflow's DAG, every
// node a child run of it (see Spawn) named by its task's name. The nodes'
// tasks (and the on-failure task) are handled as any task, with Handle,
// on this worker or others.
//
// The handler starts each node once all its parents have succeeded,
// giving it the workflow run's input and metadata, and waits durably for
// the nodes it started: while they run, the workflow run holds no worker
// slot and is waiting ("children <nodes>"); a node that ends wakes it, and
// it looks again at least every minute should a wake be lost. A node that
// fails after its retries, or is cancelled, fails its dependants, which
// never run (skipped); once every node started has ended, the on-failure
// task runs, and then the workflow run fails, without a retry, naming the
// nodes that failed. When every node succeeds the run succeeds with a JSON
// object holding each node's output under its task's name, which t's
// output type O decodes (a map[string]json.RawMessage, or a struct with a
// field per node). Cancelling the workflow run cancels its nodes.
func HandleWorkflow[I, O any](w *Worker, t *task.Task[I, O]) error {
	def := t.Definition()
	if def.Workflow == nil {
		return fmt.Errorf("worker: HandleWorkflow: task %q has no Workflow in its options", def.Name)
	}
	return w.register(def, newOrchestrator(def).run)
}

// ParentOutput returns the output of parent, a node of the same workflow
// run as the handler's run (a node of a task.Workflow), that has
// succeeded, as the parents of a node have when it runs. It is an error
// for a run that is not a workflow's node, or a parent that is not a node
// of its workflow or has not succeeded.
func ParentOutput[I, O any](ctx Context, parent *task.Task[I, O]) (O, error) {
	var out O
	rc := runContextOf(ctx)
	if rc == nil || rc.spawner == nil {
		return out, errors.New("worker: ParentOutput needs the Context the handler was given")
	}
	wf := engine.ParentOf(rc.key)
	if wf == "" {
		return out, fmt.Errorf("worker: ParentOutput: run %s is not a node of a workflow", rc.runID)
	}
	_, link, err := rc.spawner.client()
	if err != nil {
		return out, err
	}
	cs, err := link.Engine.ReadChildren(ctx, wf)
	if err != nil {
		return out, fmt.Errorf("worker: ParentOutput %q: %w", parent.Name(), err)
	}
	id := ""
	for _, c := range cs {
		if c.Name == parent.Name() {
			id = c.RunID
		}
	}
	if id == "" {
		return out, fmt.Errorf("worker: ParentOutput: task %q is not a node that started in workflow run %s", parent.Name(), wf)
	}
	runs, _, err := link.Engine.GetRuns(ctx, []string{id})
	switch {
	case err != nil:
		return out, fmt.Errorf("worker: ParentOutput %q: %w", parent.Name(), err)
	case runs[0] == nil || runs[0].Status != engine.StatusSucceeded:
		st := "gone"
		if runs[0] != nil {
			st = runs[0].Status
		}
		return out, fmt.Errorf("worker: ParentOutput: node %q (run %s) has not succeeded: it is %s", parent.Name(), id, st)
	}
	if err := json.Unmarshal(runs[0].Result, &out); err != nil {
		return out, fmt.Errorf("worker: ParentOutput %q: decode its output: %w", parent.Name(), err)
	}
	return out, nil
}

// workflowRecheckMax bounds how long a workflow run waits for its nodes
// before it looks at them again, woken or not: a node's end wakes it, and
// the look covers a wake that was lost (its worker died in between).
const workflowRecheckMax = time.Minute

// workflowRecheck is how long a workflow run's attempt-th attempt waits
// before it looks again: 1 s, doubling with each attempt, up to
// workflowRecheckMax.
func workflowRecheck(attempt int) time.Duration {
	return min(time.Second<<min(max(attempt-1, 0), 6), workflowRecheckMax)
}

// orchestrator runs the DAG of one workflow task (see HandleWorkflow).
type orchestrator struct {
	def    *task.Definition
	dag    taskdef.DAG
	record []byte
	tasks  map[string]*task.Definition
}

func newOrchestrator(def *task.Definition) *orchestrator {
	o := &orchestrator{def: def, dag: taskdef.DAGOf(def.Workflow), tasks: map[string]*task.Definition{}}
	o.record, _ = json.Marshal(o.dag) // plain strings: cannot fail
	for _, n := range def.Workflow.Nodes {
		o.tasks[n.Task.Name] = n.Task
	}
	if f := def.Workflow.OnFailure; f != nil {
		o.tasks[f.Name] = f
	}
	return o
}

// run is the workflow task's handler: one look at the nodes, starting
// those that may start, then a durable wait for the ones running, or the
// workflow's end.
func (o *orchestrator) run(ctx Context, input []byte) ([]byte, error) {
	rc, err := durableOf(ctx)
	if err != nil {
		return nil, err
	}
	if rc.spawner == nil {
		return nil, errors.New("worker: a workflow needs the Context the handler was given")
	}
	stored, err := rc.store.SaveStepResult(rc, rc.runID, taskdef.DAGStep, o.record)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: record its DAG: %w", o.def.Name, err)
	}
	if !bytes.Equal(stored, o.record) {
		return nil, NonRetryable(fmt.Errorf("workflow %q: run %s began with the DAG %s, and this worker declares %s: "+
			"a workflow's nodes must not change while its runs are active", o.def.Name, rc.runID, stored, o.record))
	}
	_, link, err := rc.spawner.client()
	if err != nil {
		return nil, err
	}
	states, err := o.look(rc, link)
	if err != nil {
		return nil, err
	}
	var active, failed []string
	ok := map[string]bool{}
	var onFailure *taskdef.NodeState
	for i := range states {
		s := &states[i]
		switch {
		case s.OnFailure:
			onFailure = s
		case s.Status == "" && o.ready(s, ok):
			if err := o.spawn(rc, link, s.Name, input); err != nil {
				return nil, err
			}
			active = append(active, s.Name)
			s.Status = engine.StatusQueued
		case s.Status == engine.StatusSucceeded:
			ok[s.Name] = true
		case s.Status == engine.StatusFailed || s.Status == engine.StatusCancelled:
			failed = append(failed, fmt.Sprintf("%s %s", s.Name, s.Status))
		case s.Status != taskdef.SkippedStatus && s.Status != "":
			active = append(active, s.Name)
		}
	}
	if len(active) == 0 && len(failed) > 0 && onFailure != nil && !engine.IsTerminal(onFailure.Status) {
		if onFailure.Status == "" {
			if err := o.spawn(rc, link, onFailure.Name, input); err != nil {
				return nil, err
			}
		}
		active = append(active, onFailure.Name)
	}
	if len(active) > 0 {
		panic(&suspension{until: rc.clock().Add(workflowRecheck(rc.attempt)),
			reason: engine.WaitChildrenPrefix + " " + strings.Join(active, ", ")})
	}
	if len(failed) > 0 {
		return nil, NonRetryable(fmt.Errorf("workflow %q: %s; their dependants were skipped", o.def.Name, strings.Join(failed, ", ")))
	}
	return o.output(rc, link, states)
}

// ready reports whether node s may start: every parent has succeeded.
func (o *orchestrator) ready(s *taskdef.NodeState, ok map[string]bool) bool {
	for _, p := range s.Parents {
		if !ok[p] {
			return false
		}
	}
	return true
}

// look reads the nodes the run recorded and their statuses.
func (o *orchestrator) look(rc *runContext, link *clientlink.Link) ([]taskdef.NodeState, error) {
	cs, err := link.Engine.ReadChildren(rc, rc.runID)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: read its nodes: %w", o.def.Name, err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.RunID
	}
	var sts []engine.RunTaskStatus
	if len(ids) > 0 {
		if sts, err = link.Engine.RunTaskStatuses(rc, ids); err != nil {
			return nil, fmt.Errorf("workflow %q: read its nodes: %w", o.def.Name, err)
		}
	}
	runs := make(map[string]taskdef.NodeRun, len(cs))
	for i, c := range cs {
		r := taskdef.NodeRun{RunID: c.RunID, Created: c.Created}
		if i < len(sts) {
			r.Status = sts[i].Status
		}
		runs[c.Name] = r
	}
	return taskdef.NodeStates(o.dag, runs), nil
}

// spawn starts node name (or the on-failure task) as a child of the
// workflow run, with the run's input and metadata: once, however often it
// is called.
func (o *orchestrator) spawn(rc *runContext, link *clientlink.Link, name string, input []byte) error {
	opts := []any{client.ChildName(name)}
	if len(rc.meta) > 0 {
		opts = append(opts, client.WithMetadata(rc.meta))
	}
	_, err := link.Spawn(rc, clientlink.SpawnRequest{Def: o.tasks[name], Parent: rc.runID, Inputs: [][]byte{input}, Options: opts})
	var item *client.BatchItemError
	if errors.As(err, &item) {
		err = item.Err
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrChildMismatch):
		return NonRetryable(err)
	}
	return fmt.Errorf("workflow %q: start node %q: %w", o.def.Name, name, err)
}

// output is the workflow's result: each node's output under its name.
func (o *orchestrator) output(ctx context.Context, link *clientlink.Link, states []taskdef.NodeState) ([]byte, error) {
	var ids, names []string
	for _, s := range states {
		if !s.OnFailure {
			ids, names = append(ids, s.RunID), append(names, s.Name)
		}
	}
	runs, _, err := link.Engine.GetRuns(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("workflow %q: read its nodes' outputs: %w", o.def.Name, err)
	}
	out := make(map[string]json.RawMessage, len(ids))
	for i, r := range runs {
		if r == nil {
			return nil, fmt.Errorf("workflow %q: node %q: its run's record is gone", o.def.Name, names[i])
		}
		out[names[i]] = r.Result
	}
	return json.Marshal(out)
}

// WaitAll is the durable form of client.WaitAll, for a handler that waits
// for runs it spawned (Spawn, SpawnMany): while one of them has not ended,
// the run gives its slot and lease back and waits, with status waiting
// ("children 2 of 3"), and its handler runs again from the top once they
// have, as after WaitForSignal; then WaitAll returns their results in the
// order of refs, and the error client.WaitAll would. A child that ends
// wakes its parent; the run also looks again by itself, after 1 s, 2 s,
// 4 s, ... at most a minute apart, which is how it notices runs of refs
// that are not its children. The code before the call runs again on every
// wake: spawns get the children spawned before, steps their stored
// results (see Step).
func WaitAll[O any](ctx Context, refs []*client.RunRef[O]) ([]O, error) {
	rc, err := durableOf(ctx)
	if err != nil {
		return nil, err
	}
	if rc.spawner == nil {
		return nil, errors.New("worker: WaitAll needs the Context the handler was given")
	}
	_, link, err := rc.spawner.client()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, r := range refs {
		if r != nil && r.RunHandle != nil {
			ids = append(ids, r.ID())
		}
	}
	if len(ids) > 0 {
		sts, err := link.Engine.RunTaskStatuses(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("worker: WaitAll: %w", err)
		}
		active := 0
		for _, s := range sts {
			if s.Status != "" && !engine.IsTerminal(s.Status) {
				active++
			}
		}
		if active > 0 {
			panic(&suspension{until: rc.clock().Add(workflowRecheck(rc.attempt)),
				reason: fmt.Sprintf("%s %d of %d", engine.WaitChildrenPrefix, active, len(ids))})
		}
	}
	return client.WaitAll(ctx, refs)
}
