// Package wire declares the JSON bodies that both the command line's
// -o json and the HTTP API write, one Go type per resource, so that the
// two cannot drift apart. The vocabulary (docs/http-api.md, "Names"):
//
//   - A body that is a run or an event carries its own ID as "id"
//     (client.RunInfo, client.EventInfo); every other body names a run
//     by "runId" (RunOutcome, Cancellation, TriggerResult, the key,
//     an event's task runs, a signal receipt).
//   - An idempotency key is "idempotencyKey" wherever it is named,
//     except in the key itself (client.KeyInfo), whose "key" it is; an
//     event's "key" is its event key.
//   - Durations are milliseconds in a field ending in "Ms"; times are
//     RFC 3339 in UTC in a field ending in "At".
//   - Every error body is an Error: "error" a stable code, "message"
//     for people, and the fields of its kind.
//
// The other resources are the client's own types: client.RunInfo (a
// run), client.KeyInfo (a held key), client.EventInfo (an event),
// client.SignalInfo (a run's signal); a signal sent is Signalled, a task
// is Task, task.Registered with its paused state.
package wire

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// RunOutcome is a run's result: its status, and once it has ended its
// result (succeeded) or error (failed, cancelled). It is the body of GET
// /api/v1/runs/{id}/result and of taskq runs result -o json.
type RunOutcome struct {
	RunID   string          `json:"runId"`
	Task    string          `json:"task"`
	Status  client.Status   `json:"status"`
	Attempt int             `json:"attempt"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Error is the failure or cancellation message of an ended run.
	Error string `json:"error,omitempty"`
}

// OutcomeOf is the outcome of a run as read: its result and error only
// once it has ended.
func OutcomeOf(info *client.RunInfo) RunOutcome {
	o := RunOutcome{RunID: info.ID, Task: info.Task, Status: info.Status, Attempt: info.Attempt}
	if info.Status.Terminal() {
		o.Result, o.Error = info.Result, info.Error
	}
	return o
}

// Cancellation is what a cancel did: the run's status afterwards, and
// whether this request cancelled it (false when it had already ended).
type Cancellation struct {
	RunID     string        `json:"runId"`
	Status    client.Status `json:"status"`
	Cancelled bool          `json:"cancelled"`
}

// TriggerResult is the answer to one trigger of a task. Outcome is
// created, or what a conflict policy did instead (attached, signalled,
// debounced: RunID is then the key's owner). In a batch, Status is the
// HTTP status the trigger would have had alone, and a trigger that
// failed carries Error and Message (and, for a collision, the key and
// its owner) instead of a run.
type TriggerResult struct {
	Status          int    `json:"status,omitempty"`
	RunID           string `json:"runId,omitempty"`
	Task            string `json:"task"`
	IdempotencyKey  string `json:"idempotencyKey,omitempty"`
	Outcome         string `json:"outcome,omitempty"`
	SupersededRunID string `json:"supersededRunId,omitempty"`
	SignalID        string `json:"signalId,omitempty"`
	Error           string `json:"error,omitempty"`
	Message         string `json:"message,omitempty"`
	ExistingRunID   string `json:"existingRunId,omitempty"`
	// Durability is how far the trigger's write reached, when it asked
	// for durable acknowledgement.
	Durability *Acknowledgement `json:"durability,omitempty"`
	// RetryOf is the run a retry retries (POST /runs/{id}/retry, runs
	// retry).
	RetryOf string `json:"retryOf,omitempty"`
}

// Acknowledgement is how far a durable trigger's write reached: the
// replicas that acknowledged it (and the local fsync) beside what was
// asked for.
type Acknowledgement struct {
	// Reached says the level asked for was reached in time.
	Reached        bool  `json:"reached"`
	Replicas       int   `json:"replicas"`
	ReplicasWanted int   `json:"replicasWanted"`
	TimeoutMs      int64 `json:"timeoutMs"`
	// LocalFsync is set when a local fsync was asked for, LocalFsynced
	// when the master's append-only file holds the write.
	LocalFsync   bool `json:"localFsync,omitempty"`
	LocalFsynced bool `json:"localFsynced,omitempty"`
}

// AcknowledgementOf is h's acknowledgement, nil when its trigger asked for
// none.
func AcknowledgementOf(h *client.RunHandle) *Acknowledgement {
	if h == nil {
		return nil
	}
	a := h.TriggerInfo().Durability
	if a == nil {
		return nil
	}
	return &Acknowledgement{Reached: a.Reached, Replicas: a.Replicas, ReplicasWanted: a.Wanted.Replicas,
		TimeoutMs: a.Wanted.Timeout.Milliseconds(), LocalFsync: a.Wanted.LocalFsync, LocalFsynced: a.LocalFsynced}
}

// Triggered describes a trigger that did not fail.
func Triggered(taskName string, h *client.RunHandle) TriggerResult {
	rc := h.TriggerInfo()
	r := TriggerResult{RunID: h.ID(), Task: taskName, IdempotencyKey: rc.IdempotencyKey,
		Outcome: string(rc.Outcome), SupersededRunID: rc.Superseded, SignalID: rc.SignalID}
	if r.Outcome == "" {
		r.Outcome = string(client.OutcomeCreated)
	}
	r.Durability = AcknowledgementOf(h)
	return r
}

// EventResult is a stored event without its payload and metadata: what a
// push answers and what a listing shows. An event of a batch that Redis
// failed has no ID and carries Error and Message.
type EventResult struct {
	ID        string                `json:"id,omitempty"`
	Key       string                `json:"key"`
	CreatedAt *time.Time            `json:"createdAt,omitempty"`
	Runs      []client.EventTaskRun `json:"runs"`
	Error     string                `json:"error,omitempty"`
	Message   string                `json:"message,omitempty"`
	// ReplayOf is the event a replay pushed again.
	ReplayOf string `json:"replayOf,omitempty"`
}

// Signalled is a signal sent: the run that took it and the signal's ID
// (POST /keys/{key}/signal, taskq signal).
type Signalled struct {
	RunID    string `json:"runId"`
	SignalID string `json:"signalId"`
}

// SignalledBy is the signal the handle a client's Signal returned says
// it sent.
func SignalledBy(h *client.RunHandle) Signalled {
	return Signalled{RunID: h.ID(), SignalID: h.TriggerInfo().SignalID}
}

// Release is the outcome of releasing an idempotency key: the key and
// the run that held it (DELETE /keys/{key}, keys release).
type Release struct {
	Key      string `json:"key"`
	RunID    string `json:"runId"`
	Released bool   `json:"released"`
}

// EventResultOf is ev without its payload and metadata.
func EventResultOf(ev *client.EventInfo) EventResult {
	t := ev.CreatedAt.UTC()
	runs := ev.Runs
	if runs == nil {
		runs = []client.EventTaskRun{}
	}
	return EventResult{ID: ev.ID, Key: ev.Key, CreatedAt: &t, Runs: runs}
}

// Error codes written by both the command line and the HTTP API.
const (
	CodeIdempotencyCollision = "idempotency_collision"
	CodeIdempotencyKeyError  = "idempotency_key_error"
)

// Error is the body of every error answer of the HTTP API, and of the
// errors the command line prints as JSON (a duplicate trigger, a key
// expression that fails).
type Error struct {
	// Code is stable and machine-readable: clients branch on it.
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field names the field at fault, when one is: a request field
	// ("events[2].payload") or, for an expression that fails, the input
	// field it could not read ("input.customer.id").
	Field string `json:"field,omitempty"`
	// Index is the item of a batch at fault.
	Index *int `json:"index,omitempty"`
	// Offset is the byte offset at fault in the body (or the path) when
	// its text is not valid UTF-8.
	Offset *int `json:"offset,omitempty"`
	// Set on idempotency collisions, and on signal errors that name the
	// key and its owner.
	Task           string        `json:"task,omitempty"`
	IdempotencyKey string        `json:"idempotencyKey,omitempty"`
	ExistingRunID  string        `json:"existingRunId,omitempty"`
	ExistingStatus client.Status `json:"existingStatus,omitempty"`
	// Set on idempotency_key_error: what failed (compile, result_type,
	// empty_key, key_too_long, eval, cost_limit, size_limit, input) and,
	// for a compile error, where.
	Kind   string `json:"kind,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Set on durability_not_reached: the run the trigger created (or was
	// deduplicated to), and how far its write reached.
	RunID      string           `json:"runId,omitempty"`
	Durability *Acknowledgement `json:"durability,omitempty"`
}

// CodeDurabilityNotReached is the error of a durable trigger whose write
// took effect but did not reach the level asked for in time.
const CodeDurabilityNotReached = "durability_not_reached"

// NotDurable is the error body of a single trigger that returned a
// *client.DurabilityError: it names the run, which exists.
func NotDurable(e *client.DurabilityError) Error {
	h := e.Run
	out := Error{Code: CodeDurabilityNotReached, Message: e.Error(), Task: e.Task, Durability: AcknowledgementOf(h)}
	if h != nil {
		out.RunID = h.ID()
	}
	if e.Collision != nil {
		out.IdempotencyKey, out.ExistingRunID = e.Collision.Key, e.Collision.ExistingRunID
	} else if h != nil {
		out.IdempotencyKey = h.TriggerInfo().IdempotencyKey
	}
	return out
}

// Collision is the error body of a trigger whose key another run holds;
// status is the owner's status ("" when unknown).
func Collision(c *client.IdempotencyCollisionError, status client.Status) Error {
	return Error{
		Code: CodeIdempotencyCollision,
		Message: fmt.Sprintf("task %s: idempotency key %s is held by run %s; fetch that run's result instead",
			strconv.Quote(c.Task), strconv.Quote(c.Key), c.ExistingRunID),
		Task: c.Task, IdempotencyKey: c.Key, ExistingRunID: c.ExistingRunID, ExistingStatus: status,
	}
}

// KeyErrorKind says what kind of idempotency_key_error err is (compile,
// result_type, empty_key, key_too_long, eval, cost_limit, size_limit,
// input, or out_of_range for a rate limit's units or limit) and where: the
// line and column of a compile error, the input field an evaluation could
// not read. ok is false for any other error.
func KeyErrorKind(err error) (e Error, ok bool) {
	if errors.Is(err, task.ErrRateLimitValue) {
		return Error{Code: CodeIdempotencyKeyError, Kind: "out_of_range"}, true
	}
	var ie *idempotency.Error
	if !errors.As(err, &ie) {
		return Error{}, false
	}
	e.Code = CodeIdempotencyKeyError
	switch {
	case errors.Is(ie.Kind, idempotency.ErrCompile):
		e.Kind, e.Line, e.Column = "compile", ie.Line, ie.Column
	case errors.Is(ie.Kind, idempotency.ErrNotString):
		e.Kind = "result_type"
	case errors.Is(ie.Kind, idempotency.ErrEmptyKey):
		e.Kind = "empty_key"
	case errors.Is(ie.Kind, idempotency.ErrKeyTooLong):
		e.Kind = "key_too_long"
	case errors.Is(ie.Kind, idempotency.ErrCostLimit):
		e.Kind = "cost_limit"
	case errors.Is(ie.Kind, idempotency.ErrSizeLimit):
		e.Kind = "size_limit"
	case errors.Is(ie.Kind, idempotency.ErrInput):
		e.Kind = "input"
	default: // ErrEval
		e.Kind, e.Field = "eval", ie.Field
	}
	return e, true
}
