package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// --- a run's attempts, signals and durable steps ----------------------------

// The outcomes of an attempt (AttemptInfo.Outcome).
const (
	// AttemptRunning is the run's latest attempt, still running.
	AttemptRunning Outcome = "running"
	// AttemptSucceeded ended the run with its result.
	AttemptSucceeded Outcome = "succeeded"
	// AttemptFailed ended the run failed: its handler failed with no
	// retry left (or with a permanent error).
	AttemptFailed Outcome = "failed"
	// AttemptRetry failed, and a retry was scheduled.
	AttemptRetry Outcome = "retry"
	// AttemptLapsed lost its lease (its worker died or stopped renewing
	// it), and the run was delivered again.
	AttemptLapsed Outcome = "lapsed"
	// AttemptRequeued was given back to the queue as its worker shut
	// down before the handler returned.
	AttemptRequeued Outcome = "requeued"
	// AttemptCancelled was running when the run was cancelled.
	AttemptCancelled Outcome = "cancelled"
)

// AttemptInfo is one attempt of a run.
type AttemptInfo struct {
	// Attempt is the attempt's number, from 1. Numbers may skip one: a
	// delivery whose worker died before it began the attempt counts.
	Attempt int `json:"attempt"`
	// Outcome is how it ended: one of the Attempt outcomes
	// (AttemptSucceeded, AttemptRetry, AttemptLapsed, ...).
	Outcome Outcome `json:"outcome"`
	// Worker is the worker (its consumer name) that ran it.
	Worker    string     `json:"worker,omitempty"`
	StartedAt *time.Time `json:"startedAt,omitempty"`
	// EndedAt is when it ended: for a lapsed attempt, when its delivery
	// was taken over; absent while it runs.
	EndedAt *time.Time `json:"endedAt,omitempty"`
	// Error is why it failed, lapsed or was given back (the cancel reason
	// for a cancelled one).
	Error string `json:"error,omitempty"`
}

// MaxAttemptHistory is how many of a run's attempts that did not succeed
// its attempt history keeps, the latest: a run retried more often shows
// the latest MaxAttemptHistory of them, then its latest attempt.
const MaxAttemptHistory = engine.MaxAttemptRecords

// attemptsOf merges the attempt history with the record's latest attempt,
// which the history holds only when it did not succeed: a succeeded,
// running or cancelled attempt is the record's alone.
func attemptsOf(r *engine.Run, hist []engine.Attempt) []AttemptInfo {
	out := make([]AttemptInfo, 0, len(hist)+1)
	for _, a := range hist {
		out = append(out, AttemptInfo{Attempt: a.Number, Outcome: Outcome(a.Outcome), Worker: a.Consumer,
			StartedAt: optTime(a.Began.UTC()), EndedAt: optTime(a.Ended.UTC()), Error: a.Error})
	}
	if r.Attempt == 0 || (len(hist) > 0 && hist[len(hist)-1].Number >= r.Attempt) {
		return out
	}
	latest := AttemptInfo{Attempt: r.Attempt, Worker: r.Consumer, StartedAt: optTime(r.Started.UTC())}
	switch Status(r.Status) {
	case StatusRunning:
		latest.Outcome = AttemptRunning
	case StatusSucceeded:
		latest.Outcome, latest.EndedAt = AttemptSucceeded, optTime(r.Finished.UTC())
	case StatusFailed:
		latest.Outcome, latest.EndedAt, latest.Error = AttemptFailed, optTime(r.Finished.UTC()), r.Error
	case StatusCancelled:
		latest.Outcome, latest.EndedAt, latest.Error = AttemptCancelled, optTime(r.Finished.UTC()), r.Error
	default:
		// Queued again after an attempt the history does not hold: one
		// written before the history was kept.
		latest.Outcome = AttemptRequeued
	}
	return append(out, latest)
}

// withParts fills info's Attempts, SignalCount and StepCount from r: one
// more round trip for a run that has an attempt history, signals or steps,
// none for one that has none. Its concurrency groups and, for a workflow
// run that has not begun, its DAG come from its task's registration, read
// once for both.
func (in *Inspector) withParts(ctx context.Context, info *RunInfo, r *engine.Run) error {
	parts, err := in.c.store.ReadParts(ctx, r)
	if err != nil {
		return in.c.unavailable(ctx, err)
	}
	info.Attempts = attemptsOf(r, parts.Attempts)
	info.SignalCount, info.StepCount = int(parts.Signals), int(parts.Steps)
	// An aid to reading, never a reason to fail: a task not registered,
	// or a registry that cannot be read, leaves both out.
	reg, _ := in.c.registeredTask(ctx, info.Task) // nil on an error
	in.withGroups(info, reg)
	if err := in.withChildren(ctx, info, r); err != nil {
		return err
	}
	return in.withWorkflow(ctx, info, r, reg)
}

// withGroups sets info's concurrency groups, derived from its input by its
// task's registered definition reg (nil: not registered). A task not
// registered, or whose definition fails on the input (it changed since the
// run was triggered), shows none: the groups are an aid to reading, never
// a reason to fail.
func (in *Inspector) withGroups(info *RunInfo, reg *task.Registered) {
	if reg == nil {
		return
	}
	def, err := in.c.defs.get(reg)
	if err != nil || len(def.Concurrency) == 0 {
		return
	}
	if groups, err := def.ConcurrencyGroups(info.Input, info.Metadata); err == nil {
		info.ConcurrencyGroups = groups
	}
}

// SignalInfo is one signal sent to a run, as stored: as RunSignals lists
// it, and as the run's handler receives it (worker.Context's NextSignal
// and Signals, worker.WaitForSignal).
type SignalInfo struct {
	SignalID string          `json:"signalId"`
	Payload  json.RawMessage `json:"payload"`
	SentAt   time.Time       `json:"sentAt"`
}

// RunSignals returns a page of the signals sent to a run, in the order
// they were sent (the run's signal stream; a run holds at most the
// client's MaxSignals). A cursor stays valid while the run's record lives.
// It fails with an error matching ErrRunNotFound when the run does not
// exist, and ErrInvalidCursor for a cursor no page returned.
func (in *Inspector) RunSignals(ctx context.Context, runID string, o ListOptions) (*Page[SignalInfo], error) {
	limit, err := pageLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	from := "0"
	if o.Cursor != "" {
		from = o.Cursor
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	if err := in.runExists(ctx, runID); err != nil {
		return nil, err
	}
	sigs, err := in.c.store.ReadSignals(ctx, runID, from, limit+1, -1)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	page := &Page[SignalInfo]{Items: make([]SignalInfo, 0, min(len(sigs), limit))}
	for i, s := range sigs {
		if i == limit {
			page.NextCursor = sigs[i-1].Cursor
			break
		}
		page.Items = append(page.Items, SignalInfo{SignalID: s.ID, Payload: s.Payload, SentAt: s.Sent.UTC()})
	}
	return page, nil
}

// StepInfo is one durable step of a run that completed: its name and
// result.
type StepInfo struct {
	Name   string          `json:"name"`
	Result json.RawMessage `json:"result"`
}

// RunSteps returns a page of the durable steps a run completed (see
// worker.Step), each with its stored result. Steps have no order but their
// names: a page is sorted by name, the pages are not. A page holds about
// Limit steps (Redis's HSCAN; a run with a few steps gets them in one
// page); a step stored while the pages are walked may be missed. It fails
// with an error matching ErrRunNotFound when the run does not exist, and
// ErrInvalidCursor for a cursor no page returned.
func (in *Inspector) RunSteps(ctx context.Context, runID string, o ListOptions) (*Page[StepInfo], error) {
	limit, err := pageLimit(o.Limit)
	if err != nil {
		return nil, err
	}
	var from uint64
	if o.Cursor != "" {
		if from, err = strconv.ParseUint(o.Cursor, 10, 64); err != nil || from == 0 {
			return nil, fmt.Errorf("%w: %q", ErrInvalidCursor, o.Cursor)
		}
	}
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	if err := in.runExists(ctx, runID); err != nil {
		return nil, err
	}
	steps, next, err := in.c.store.ScanSteps(ctx, runID, from, limit)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	page := &Page[StepInfo]{Items: make([]StepInfo, 0, len(steps))}
	for _, s := range steps {
		page.Items = append(page.Items, StepInfo{Name: s.Name, Result: s.Result})
	}
	if next != 0 {
		page.NextCursor = strconv.FormatUint(next, 10)
	}
	return page, nil
}

// runExists fails with an error matching ErrRunNotFound unless the run's
// record exists.
func (in *Inspector) runExists(ctx context.Context, runID string) error {
	_, err := in.c.store.RunStatus(ctx, runID)
	if errors.Is(err, ErrRunNotFound) {
		return fmt.Errorf("%w: %s", ErrRunNotFound, runID)
	}
	if err != nil {
		return in.c.unavailable(ctx, err)
	}
	return nil
}
