package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/engine"
)

// Status is a run's status.
type Status string

// Run statuses. A run being retried is StatusQueued with Attempt > 0. A
// run whose handler waits durably (worker.SleepFor, worker.WaitForSignal)
// is StatusWaiting, with what it waits for in RunInfo.Waiting.
const (
	StatusQueued    Status = engine.StatusQueued
	StatusRunning   Status = engine.StatusRunning
	StatusWaiting   Status = engine.StatusWaiting
	StatusSucceeded Status = engine.StatusSucceeded
	StatusFailed    Status = engine.StatusFailed
	StatusCancelled Status = engine.StatusCancelled
)

// Terminal reports whether the status is final.
func (s Status) Terminal() bool { return engine.IsTerminal(string(s)) }

// RunInfo is a snapshot of a run.
type RunInfo struct {
	ID      string `json:"id"`
	Task    string `json:"task"`
	Status  Status `json:"status"`
	Attempt int    `json:"attempt"`
	Retries int    `json:"retries"`
	// Failures counts the attempts that failed, which Retries are spent
	// on; the others (given back when a worker shut down, taken over after
	// a lease lapsed) do not count against Retries.
	Failures int `json:"failures,omitempty"`
	// Priority is the run's priority, 1 (the lowest, the default) to 3.
	Priority int `json:"priority"`
	// Waits counts the attempts that ended with the handler waiting
	// durably (worker.SleepFor, WaitForSignal, WaitForEvent, a workflow
	// waiting for its nodes): neither failures nor redeliveries.
	Waits          int             `json:"waits,omitempty"`
	IdempotencyKey string          `json:"idempotencyKey,omitempty"`
	Strategy       string          `json:"strategy,omitempty"`
	Input          json.RawMessage `json:"input,omitempty"`
	Metadata       json.RawMessage `json:"additionalMetadata,omitempty"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          string          `json:"error,omitempty"`
	CreatedAt      time.Time       `json:"createdAt"`
	StartedAt      *time.Time      `json:"startedAt,omitempty"`
	FinishedAt     *time.Time      `json:"finishedAt,omitempty"`
	// ScheduledAt is when a queued run waiting for a retry, a debounce
	// window or its scheduled time (RunAt, RunIn) falls due; set by the
	// Inspector's reads only.
	ScheduledAt *time.Time `json:"scheduledAt,omitempty"`
	// Scheduled is true for a queued run waiting for the time it was
	// scheduled at (RunAt, RunIn) and not yet due, not one a rate limit
	// deferred (see Waiting); set by the Inspector's reads only.
	Scheduled bool `json:"scheduled,omitempty"`
	// RetryOf is the run this run retries (Inspector.RetryRun), RetriedBy
	// the run that retried this one.
	RetryOf   string `json:"retryOf,omitempty"`
	RetriedBy string `json:"retriedBy,omitempty"`
	// Parent is the run that spawned this one (worker.Spawn), "" for a
	// run no run spawned.
	Parent string `json:"parent,omitempty"`
	// Waiting says why a queued run is held back before its start, such
	// as `rate limit "emails" key "acme"` or `concurrency group "acme" (2/2
	// running)`, or what a StatusWaiting run's handler waits for: "sleep
	// until <time>" or "signal"; "" otherwise.
	Waiting string `json:"waiting,omitempty"`
	// ConcurrencyGroups are the run's concurrency groups, one per
	// concurrency limit of its task as registered (task.Options.Concurrency),
	// in order; none when the task has none or is not registered. Set by
	// Inspector.GetRun only.
	ConcurrencyGroups []string `json:"concurrencyGroups,omitempty"`
	// Attempts are the run's attempts, oldest first: each one that
	// failed, was retried, lapsed or was given back at its worker's
	// shutdown (the latest MaxAttemptHistory of those), then the latest
	// attempt as the run record has it when it succeeded, runs, or was
	// cancelled; none for a run that has begun no attempt. SignalCount and
	// StepCount count the signals sent to it and the durable steps it
	// completed. Set by Inspector.GetRun only.
	Attempts    []AttemptInfo `json:"attempts,omitempty"`
	SignalCount int           `json:"signalCount,omitempty"`
	StepCount   int           `json:"stepCount,omitempty"`
	// Children are the runs this run spawned (worker.Spawn), by name
	// (positions in the order they were spawned), each with its status.
	// Set by Inspector.GetRun only.
	Children []ChildInfo `json:"children,omitempty"`
	// Workflow is the DAG of a workflow run (task.Workflow): its nodes by
	// layer (so each after its parents), within a layer by name, each with
	// its state; the on-failure task last. It is the DAG the run stored on
	// its first attempt; before that (a run queued, or cancelled before it
	// began) it is its task's DAG as workers registered it, every node
	// waiting (or skipped), and none when no worker has registered the
	// task. Set by Inspector.GetRun only.
	Workflow []WorkflowNode `json:"workflow,omitempty"`
}

func optTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func runInfo(r *engine.Run) *RunInfo {
	info := &RunInfo{
		ID: r.ID, Task: r.Task, Status: Status(r.Status), Attempt: r.Attempt, Retries: r.Retries, Failures: r.Fails, Waits: r.Waits,
		IdempotencyKey: r.Key, Error: r.Error, CreatedAt: r.Created,
		StartedAt: optTime(r.Started), FinishedAt: optTime(r.Finished),
		Input: r.Input, Metadata: r.Meta, Result: r.Result, RetryOf: r.RetryOf, RetriedBy: r.RetriedBy, Parent: r.Parent,
		Priority: max(r.Priority, engine.PriorityDefault),
	}
	if r.Strategy != engine.StrategyNone {
		info.Strategy = string(r.Strategy)
	}
	if r.Status == engine.StatusQueued || r.Status == engine.StatusWaiting {
		info.Waiting = r.Waiting
	}
	return info
}

// Err returns the error a waiter gets for this run: nil for a success,
// a *RunError otherwise.
func (i *RunInfo) Err() error {
	switch i.Status {
	case StatusFailed:
		return &RunError{RunID: i.ID, Status: i.Status, Attempts: i.Attempt, Message: i.Error}
	case StatusCancelled:
		e := &RunError{RunID: i.ID, Status: i.Status, Attempts: i.Attempt, Message: i.Error}
		if by, ok := cancelreason.SupersededBy(i.Error); ok {
			e.By = by
		} else {
			e.Group, e.By, _ = cancelreason.Parse(i.Error)
		}
		return e
	}
	return nil
}

// RunHandle refers to one run, whether the caller created it or a
// collision named it: the same calls work on both. A handle a trigger
// returned also says what that trigger did (TriggerInfo).
type RunHandle struct {
	id string
	c  *Client

	trigger TriggerInfo
	// ackErr is why waiting for durable acknowledgement failed.
	ackErr error
}

// TriggerInfo is what the trigger (or the signal: Client.Signal,
// RunHandle.Signal) that returned a handle did. A handle made with
// Client.Handle or Ref has the zero value.
type TriggerInfo struct {
	// Outcome is OutcomeCreated, or what the conflict policy did instead
	// when another run held the key (OutcomeAttached, OutcomeSignalled,
	// OutcomeDebounced: the handle is then the owner's).
	Outcome Outcome
	// IdempotencyKey is the key the trigger derived ("" when the task is
	// not deduplicated).
	IdempotencyKey string
	// Superseded is the run the trigger took the key from (policy
	// supersede), or "".
	Superseded string
	// SignalID is the ID of the signal the trigger (or the signal call)
	// sent to the owner (OutcomeSignalled).
	SignalID string
	// Durability is how far the trigger's write reached (replicas
	// acknowledged, local fsync) when it asked for durable
	// acknowledgement; nil otherwise.
	Durability *Acknowledgement
}

// Outcome says what the trigger that returned a handle did (the Outcome
// constants), or how an attempt of a run ended (AttemptInfo.Outcome, the
// Attempt constants).
type Outcome string

// Trigger outcomes. A handle made with Client.Handle has none.
const (
	// OutcomeCreated: the trigger created the run.
	OutcomeCreated Outcome = "created"
	// OutcomeAttached: the key's owner was returned (policy attach).
	OutcomeAttached Outcome = "attached"
	// OutcomeSignalled: the input went to the owner as a signal (or a
	// signal call's payload went to its run).
	OutcomeSignalled Outcome = "signalled"
	// OutcomeDebounced: the queued owner took the input and waits anew.
	OutcomeDebounced Outcome = "debounced"
)

// TriggerInfo says what the trigger that returned this handle did: its
// outcome, key, the run it superseded, the signal it sent and how far its
// write reached.
func (h *RunHandle) TriggerInfo() TriggerInfo {
	r := h.trigger
	if r.Durability != nil {
		a := *r.Durability
		r.Durability = &a
	}
	return r
}

// Handle returns a handle to the run with the given ID. It does not check
// that the run exists.
func (c *Client) Handle(runID string) *RunHandle { return &RunHandle{id: runID, c: c} }

// ID is the run's ID.
func (h *RunHandle) ID() string { return h.id }

// String is the run's ID, so that a handle (and a RunRef) prints as the
// run it refers to in logs and fmt verbs.
func (h *RunHandle) String() string {
	if h == nil {
		return "<nil>"
	}
	return h.id
}

// Get reads the run's current state.
func (h *RunHandle) Get(ctx context.Context) (*RunInfo, error) {
	ctx, cancel := h.c.opCtx(ctx)
	defer cancel()
	r, err := h.c.store.GetRun(ctx, h.id)
	if err != nil {
		return nil, h.c.unavailable(ctx, err)
	}
	return runInfo(r), nil
}

// Wait blocks until the run ends or ctx is done and returns its final
// state. It is woken by the run's completion notice, not by polling.
func (h *RunHandle) Wait(ctx context.Context) (*RunInfo, error) {
	var info *RunInfo
	err := h.c.waiter.wait(ctx, h.id, func(ctx context.Context) (bool, error) {
		i, err := h.Get(ctx)
		if err != nil {
			return false, err
		}
		info = i
		return i.Status.Terminal(), nil
	})
	if err != nil {
		return nil, err
	}
	return info, nil
}

// resultJSON waits for the run and returns its JSON result, or the run's
// failure or cancellation as an error.
func (h *RunHandle) resultJSON(ctx context.Context) (json.RawMessage, error) {
	info, err := h.Wait(ctx)
	if err != nil {
		return nil, err
	}
	if err := info.Err(); err != nil {
		return nil, err
	}
	return info.Result, nil
}

// Cancel cancels the run if it has not ended: a queued run never starts, a
// running run's handler sees its context cancelled, and a status-strategy
// key is released. The runs it spawned are cancelled too, but for those
// spawned Detached, and theirs in turn (should this process die midway, a
// worker cancels the rest). It returns the run's status afterwards;
// cancelling an ended run changes nothing.
func (h *RunHandle) Cancel(ctx context.Context) (Status, error) {
	return h.c.cancel(ctx, h.id)
}

// cancel cancels the run with the given ID; see RunHandle.Cancel.
func (c *Client) cancel(ctx context.Context, runID string) (Status, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	res, err := c.store.Cancel(ctx, runID, "cancelled by request", c.opts.Clock.Now())
	if err != nil {
		return "", c.unavailable(ctx, err)
	}
	if res.Status == "missing" {
		return "", fmt.Errorf("%w: %s", ErrRunNotFound, runID)
	}
	if res.Written {
		c.cancelChildren(ctx, runID)
	}
	return Status(res.Status), nil
}

// RunRef is a typed handle to a run whose result is an O.
type RunRef[O any] struct {
	*RunHandle
}

// Result waits for the run and decodes its result.
func (r *RunRef[O]) Result(ctx context.Context) (O, error) {
	var out O
	raw, err := r.resultJSON(ctx)
	if err != nil {
		return out, err
	}
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("run %s: decode result: %w", r.ID(), err)
	}
	return out, nil
}

// Ref returns a typed handle to the run with the given ID.
func Ref[O any](c *Client, runID string) *RunRef[O] {
	return &RunRef[O]{RunHandle: c.Handle(runID)}
}
