package client

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// ChildName names a child run among the children of the run that spawns
// it (worker.Spawn): the child's identity is its parent's run and this
// name, so a parent retried, redelivered or replayed that spawns under the
// same name gets the same child, never a second one. A name is 1 to 128
// bytes of printable ASCII without a space, "/" or "#". With
// worker.SpawnMany, the i-th child is named "<name>#<i>". Without it a
// child is named by its position among the handler's spawns that have no
// name ("#0", "#1", ...), which needs them made in the same order on every
// attempt. It applies to spawns only: a trigger given it is refused.
func ChildName(name string) RunOption {
	return func(o *runOptions) { o.childName = name }
}

// Detached makes a child run (worker.Spawn) live on when its parent is
// cancelled: by default cancelling a run cancels its children, and theirs.
// It applies to spawns only: a trigger given it is refused.
func Detached() RunOption {
	return func(o *runOptions) { o.detached = true }
}

// notChild refuses the options only a spawn takes on a trigger.
func (o *runOptions) notChild(def *task.Definition) error {
	if o.childName != "" || o.detached {
		return fmt.Errorf("task %q: ChildName and Detached apply to a child run (worker.Spawn), not to a trigger", def.Name)
	}
	return nil
}

// spawn is clientlink.Link.Spawn: it admits each child (its key derived
// from its parent, its name and the key its task derives, see
// engine.ChildKey), places it, records it under its parent with the run
// ID chosen for it (a name recorded before keeps its child: a replayed
// parent gets the IDs it recorded then), triggers the children not known
// to be created with those IDs, and marks the ones created. A child
// triggered before answers engine.ErrRunExists: its ID is taken, by it.
func (c *Client) spawn(ctx context.Context, req clientlink.SpawnRequest) ([]string, error) {
	def := req.Def
	var o runOptions
	for _, opt := range req.Options {
		f, ok := opt.(RunOption)
		if !ok {
			return nil, fmt.Errorf("client: task %q: spawn option %T is not a RunOption", def.Name, opt)
		}
		f(&o)
	}
	if err := o.checkPriority(def); err != nil {
		return nil, err
	}
	n := len(req.Inputs)
	switch {
	case n > c.opts.MaxBatch:
		return nil, fmt.Errorf("task %q: %w", def.Name, &LimitError{What: "batch", Size: n, Limit: c.opts.MaxBatch})
	case o.policy != "":
		return nil, fmt.Errorf("task %q: OnConflict does not apply to a child run: a spawn under a name used before gets the child spawned then", def.Name)
	case o.childName != "":
		if err := engine.CheckChildName(o.childName); err != nil {
			return nil, fmt.Errorf("task %q: %w", def.Name, err)
		}
	}
	if n == 0 {
		return nil, nil
	}
	meta, err := o.metaJSON()
	if err != nil {
		return nil, fmt.Errorf("task %q: encode metadata: %w", def.Name, err)
	}
	if err := engine.CheckSource(o.source); err != nil {
		return nil, fmt.Errorf("task %q: %w", def.Name, err)
	}
	dur, err := c.resolveDurability(def, o.durability)
	if err != nil {
		return nil, err
	}
	names := make([]string, n)
	switch {
	case o.childName != "" && !req.Many:
		names[0] = o.childName
	case o.childName != "":
		for i := range names {
			names[i] = engine.NumberedName(o.childName, i)
		}
	default:
		first := req.Position(n)
		for i := range names {
			names[i] = engine.PositionName(first + i)
		}
	}
	now := c.opts.Clock.Now()
	ps := make([]*engine.EnqueueParams, n)
	for i, in := range req.Inputs {
		p, err := c.admission().Admit(admission.Trigger{Def: def, Input: in, Metadata: meta, Policy: engine.PolicyAttach,
			Now: now, Source: o.source, Schedule: o.schedule, Priority: o.priority, Parent: req.Parent, ChildName: names[i]})
		if err != nil {
			err = fmt.Errorf("task %q: %w", def.Name, admissionError(err))
			if req.Many {
				err = &BatchItemError{Index: i, Err: err}
			}
			return nil, err
		}
		p.Durability = dur
		ps[i] = p
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	if err := c.store.PlaceRuns(ctx, ps); err != nil {
		return nil, fmt.Errorf("task %q: spawn: %w", def.Name, c.unavailable(ctx, err))
	}
	recs := make([]engine.Child, n)
	for i, p := range ps {
		recs[i] = engine.Child{Name: names[i], RunID: p.RunID, Task: def.Name, Key: p.Key, Detached: o.detached}
	}
	kept, err := c.store.RecordChildren(ctx, req.Parent, recs)
	if err != nil {
		return nil, fmt.Errorf("task %q: spawn: %w", def.Name, c.unavailable(ctx, err))
	}
	ids := make([]string, n)
	var todo []*engine.EnqueueParams
	var todoAt []int
	for i, k := range kept {
		if k.Task != def.Name || k.Key != recs[i].Key {
			return nil, fmt.Errorf("task %q: child %q: %w: it is run %s of task %q with key %q, this one has key %q",
				def.Name, k.Name, engine.ErrChildMismatch, k.RunID, k.Task, k.Key, recs[i].Key)
		}
		ids[i] = k.RunID
		if !k.Created {
			ps[i].RunID = k.RunID
			todo, todoAt = append(todo, ps[i]), append(todoAt, i)
		}
	}
	if len(todo) == 0 {
		return ids, nil
	}
	results, errs := c.store.EnqueueBatch(ctx, todo)
	var created []engine.Child
	var other []error
	var short []*RunHandle
	var shortAt []int
	for j, r := range results {
		i := todoAt[j]
		switch {
		case errors.Is(errs[j], engine.ErrRunExists):
			// Created by an earlier attempt that did not live to mark it.
			created = append(created, kept[i])
			continue
		case errs[j] != nil:
			other = append(other, &BatchItemError{Index: i, Err: c.unavailable(ctx, errs[j])})
			continue
		case r.Outcome != engine.TriggerCreated && r.Owner != ids[i]:
			// Another run holds the child's key: only a key a task's own
			// expression made to look like a child's can.
			other = append(other, &BatchItemError{Index: i, Err: c.collision(def, todo[j].Key, r.Owner)})
			continue
		}
		h := c.Handle(ids[i])
		if !c.acknowledged(def.Name, h, r.Ack) {
			// Left unmarked: the next spawn of it sends it again.
			short, shortAt = append(short, h), append(shortAt, i)
			continue
		}
		created = append(created, kept[i])
	}
	// A mark that fails is harmless: the next spawn of these children
	// triggers them again and finds them.
	_ = c.store.MarkChildrenCreated(ctx, req.Parent, created)
	if len(short) > 0 {
		other = append(other, notDurableBatch(def.Name, short, shortAt))
	}
	return ids, errors.Join(other...)
}

// ChildInfo is a child run as its parent recorded it (see worker.Spawn).
type ChildInfo struct {
	// Name is the child's name among its parent's children: the one
	// given (ChildName), or its position among the unnamed ("#0", ...).
	Name  string `json:"name"`
	RunID string `json:"runId"`
	Task  string `json:"task"`
	// Status is the child's status; "" for a child recorded whose run is
	// not created (its spawn was cut short: the parent's next attempt
	// creates it), or whose record expired.
	Status Status `json:"status,omitempty"`
	// Detached: the child is not cancelled with its parent.
	Detached bool `json:"detached,omitempty"`
}

// withChildren sets info.Children: the children r recorded, with their
// statuses.
func (in *Inspector) withChildren(ctx context.Context, info *RunInfo, r *engine.Run) error {
	if !r.HasChildren {
		return nil
	}
	cs, err := in.c.store.ReadChildren(ctx, r.ID)
	if err != nil {
		return in.c.unavailable(ctx, err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.RunID
	}
	sts, err := in.c.store.RunTaskStatuses(ctx, ids)
	if err != nil {
		return in.c.unavailable(ctx, err)
	}
	info.Children = make([]ChildInfo, len(cs))
	for i, c := range cs {
		info.Children[i] = ChildInfo{Name: c.Name, RunID: c.RunID, Task: c.Task, Detached: c.Detached}
		if i < len(sts) {
			info.Children[i].Status = Status(sts[i].Status)
		}
	}
	return nil
}

// cancelChildren cancels the children of runID, which was just cancelled,
// but for the detached ones, and theirs. A failure leaves the rest to the
// workers (engine.Children.RecoverCascades), so it is only logged.
func (c *Client) cancelChildren(ctx context.Context, runID string) {
	res, err := c.store.CancelChildren(ctx, runID, c.opts.Clock.Now())
	if err != nil {
		c.opts.Logger.Warn("taskq: cancelling the children of a cancelled run failed; a worker cancels them later",
			"run", runID, "cancelled", res.Cancelled, "err", err)
	}
}

// waitAllAtOnce bounds the runs WaitAll waits for at once.
const waitAllAtOnce = 64

// WaitAll waits for every run of refs and returns their results in the
// same order. A run that failed or was cancelled, or whose wait failed,
// leaves the zero value at its index and adds a *BatchItemError naming
// the index to the error, which joins them all (a nil ref, a trigger of
// RunMany that collided, is one too). It returns when every run has
// ended, or ctx is done.
func WaitAll[O any](ctx context.Context, refs []*RunRef[O]) ([]O, error) {
	out := make([]O, len(refs))
	errs := make([]error, len(refs))
	sem := make(chan struct{}, waitAllAtOnce)
	var wg sync.WaitGroup
	for i, r := range refs {
		if r == nil || r.RunHandle == nil {
			errs[i] = &BatchItemError{Index: i, Err: errors.New("client: no run to wait for")}
			continue
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			v, err := r.Result(ctx)
			if err != nil {
				errs[i] = &BatchItemError{Index: i, Err: err}
				return
			}
			out[i] = v
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}
