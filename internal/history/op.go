package history

import (
	"fmt"
	"math"
	"time"
)

// Kind says what an operation was.
type Kind string

// Operations observed at Redis by Hook: one script call each.
const (
	// KindEnqueue is enqueue.lua: claim the key, create the run, queue it.
	KindEnqueue Kind = "enqueue"
	// KindStart is start.lua: begin an attempt; the reply carries its number.
	KindStart Kind = "start"
	// KindFinish is finish.lua: record an attempt's outcome, fenced by it.
	// With Op.Begins it also begins that attempt, in the same write.
	KindFinish Kind = "finish"
	// KindCancel is cancel.lua.
	KindCancel Kind = "cancel"
	// KindRequeue is requeue.lua: a worker shutting down gives a run back.
	KindRequeue Kind = "requeue"
)

// Operations recorded by a load generator.
const (
	// KindTrigger is a client's trigger as its caller saw it: a run ID, a
	// collision naming the owner, or an error.
	KindTrigger Kind = "trigger"
	// KindReadRun reads a run's status (Result.Status; "" when missing).
	KindReadRun Kind = "read-run"
	// KindReadKey reads a key's owner (Result.Owner; "" when free).
	KindReadKey Kind = "read-key"
)

// Code is how an operation ended.
type Code string

// Codes of Result.
const (
	// CodeOK: the operation did what it was asked. Enqueue and trigger:
	// the run was created. Start: an attempt began. Finish, cancel,
	// requeue: the outcome was written (and, for a finish with Op.Begins,
	// its attempt begun). Reads: the value was read.
	CodeOK Code = "ok"
	// CodeRefused: the script wrote nothing and said why (Result.Status).
	// Enqueue and trigger: the key is held by Result.Owner.
	CodeRefused Code = "refused"
	// CodeError: a definite failure; nothing was written.
	CodeError Code = "error"
	// CodeUnknown: the caller does not know what happened (the connection
	// broke, a deadline passed, the process died): the operation may have
	// taken effect, at any time after it was called.
	CodeUnknown Code = "unknown"
)

// Result is what an operation returned.
type Result struct {
	Code Code `json:"code"`
	// Owner is the run that holds the key (enqueue or trigger that created
	// nothing; read-key).
	Owner string `json:"owner,omitempty"`
	// Reply is enqueue.lua's reply code: 1 created, 0 rejected, 2 attached,
	// 3 signalled, 4 debounced.
	Reply int `json:"reply,omitempty"`
	// Superseded is the owner a superseding trigger took the key from.
	Superseded string `json:"superseded,omitempty"`
	// Status is the run's status after a write, why a script refused
	// ("stale", "missing", "exhausted", a terminal status), or the status
	// read by KindReadRun.
	Status string `json:"status,omitempty"`
	// Attempt is the attempt a start began.
	Attempt int `json:"attempt,omitempty"`
	// RunID is the run a trigger created.
	RunID string `json:"run,omitempty"`
	// Err is the error's text for CodeError and CodeUnknown.
	Err string `json:"err,omitempty"`
}

// Op is one recorded operation.
type Op struct {
	// Process names the recording process; ID numbers its operations.
	Process string `json:"p"`
	ID      int64  `json:"id"`
	Kind    Kind   `json:"k"`
	// Call and Return are wall-clock times in unix nanoseconds. Return is 0
	// when the operation never returned (its process died first).
	Call   int64 `json:"call"`
	Return int64 `json:"ret,omitempty"`

	RunID    string `json:"run,omitempty"`
	Task     string `json:"task,omitempty"`
	Key      string `json:"key,omitempty"`
	Strategy string `json:"strat,omitempty"`
	Policy   string `json:"policy,omitempty"`
	// HoldMs is the claim's lifetime (ttl or fallback ttl); RetainMs how
	// long a status-strategy key is kept after its run ends.
	HoldMs   int64 `json:"hold,omitempty"`
	RetainMs int64 `json:"retain,omitempty"`
	// Token is the "op" field of the trigger's input: it ties a client's
	// trigger to the enqueue call it made.
	Token string `json:"tok,omitempty"`
	// Attempt is the fencing token a finish or requeue sent; for a finish
	// that Begins, the attempt it begins.
	Attempt int `json:"att,omitempty"`
	// Outcome is what a finish reported: succeeded, failed or retry.
	Outcome string `json:"out,omitempty"`
	// Begins marks a finish that begins its attempt itself, for a handler
	// that returned before the worker asked start.lua to begin it: the
	// finish writes only while the run is still queued for the delivery
	// and has begun Attempt-1 attempts, and then is both the start and the
	// finish of Attempt, in one atomic write. No start precedes it for
	// that attempt.
	Begins bool `json:"begins,omitempty"`
	// Redelivered marks a start of a delivery reclaimed after its lease
	// lapsed: if the run is still queued, the lost delivery may have run
	// its handler without beginning an attempt, so the start counts it
	// and begins the attempt after next.
	Redelivered bool `json:"redel,omitempty"`

	Result Result `json:"res"`
}

// Keyed reports whether the operation's run claims an idempotency key.
func (o *Op) Keyed() bool { return o.Key != "" && o.Strategy != "" && o.Strategy != "none" }

// End is when the operation could last have taken effect: its return, or
// never for an operation whose outcome is unknown.
func (o *Op) End() int64 {
	if o.Return == 0 || o.Result.Code == CodeUnknown {
		return math.MaxInt64
	}
	return o.Return
}

// String describes the operation in one line for failure messages.
func (o *Op) String() string {
	at := time.Unix(0, o.Call).Format("15:04:05.000000")
	s := fmt.Sprintf("%s %s#%d %s", at, o.Process, o.ID, o.Kind)
	if o.RunID != "" {
		s += " run=" + o.RunID
	}
	if o.Key != "" {
		s += fmt.Sprintf(" key=%q", o.Key)
	}
	if o.Attempt != 0 {
		s += fmt.Sprintf(" attempt=%d", o.Attempt)
	}
	if o.Outcome != "" {
		s += " outcome=" + o.Outcome
	}
	if o.Begins {
		s += " begins"
	}
	if o.Redelivered {
		s += " redelivered"
	}
	if o.Return == 0 {
		return s + " -> (never returned)"
	}
	s += fmt.Sprintf(" -> %s", o.Result.Code)
	r := o.Result
	if r.RunID != "" {
		s += " run=" + r.RunID
	}
	if r.Owner != "" {
		s += " owner=" + r.Owner
	}
	if r.Status != "" {
		s += " status=" + r.Status
	}
	if r.Attempt != 0 {
		s += fmt.Sprintf(" attempt=%d", r.Attempt)
	}
	if r.Err != "" {
		s += fmt.Sprintf(" err=%q", r.Err)
	}
	return s + fmt.Sprintf(" (%s)", time.Duration(o.Return-o.Call))
}
