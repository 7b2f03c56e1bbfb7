package engine

import (
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// Policy is the trigger's conflict policy (defined once, in package task),
// as enqueue.lua reads it.
type Policy = task.ConflictPolicy

// Conflict policies, as the scripts name them.
const (
	PolicyReject    = task.ConflictReject
	PolicyAttach    = task.ConflictAttach
	PolicySupersede = task.ConflictSupersede
	PolicySignal    = task.ConflictSignal
)

// ValidPolicy reports whether p is a known policy ("" counts as reject).
func ValidPolicy(p Policy) bool {
	switch p {
	case "", PolicyReject, PolicyAttach, PolicySupersede, PolicySignal:
		return true
	}
	return false
}

// TriggerOutcome says what a trigger did.
type TriggerOutcome int

// Trigger outcomes, as enqueue.lua reports them.
const (
	TriggerRejected  TriggerOutcome = 0
	TriggerCreated   TriggerOutcome = 1
	TriggerAttached  TriggerOutcome = 2
	TriggerSignalled TriggerOutcome = 3
	TriggerDebounced TriggerOutcome = 4
)

// EnqueueParams describe one trigger.
type EnqueueParams struct {
	RunID    string
	Task     string
	Input    []byte // JSON
	Meta     []byte // JSON
	Key      string // idempotency key; "" with StrategyNone
	Strategy Strategy
	// Hold is the ttl (StrategyTTL) or the fallback ttl (StrategyStatus).
	Hold time.Duration
	// Retain keeps a status-strategy key after the run ends.
	Retain        time.Duration
	Retries       int
	MaxDeliveries int
	Timeout       time.Duration
	// Retention is how long the run record is kept after the run ends.
	Retention time.Duration
	Now       time.Time
	// Policy applies when the key is held (default reject).
	Policy Policy
	// SignalID names the signal sent to the owner under PolicySignal.
	SignalID string
	// MaxSignals bounds the owner's signals (default MaxSignalsDefault).
	MaxSignals int
	// Source says where the trigger came from, recorded when it creates
	// no run ("" is SourceClient; see suppressed.go). EnqueueBatch sends
	// the triggers of each source in calls of their own.
	Source string
	// Durability, when enabled, makes the trigger wait until replicas hold
	// its write (see durable.go); its result's Ack says how far it got.
	Durability Durability
	// Delay schedules the run: it is created queued, with its key claimed
	// at once, and waits in the partition's retry zset until Now + Delay,
	// when the workers' forwarder (promote.lua) puts it in its task
	// stream. Zero (or less) queues it at once. Hold should cover the
	// wait: admission adds Delay to it. Not for StrategyDebounce, whose
	// runs wait for their window.
	Delay time.Duration
	// Priority orders the task's queued runs (see Priority): 0 or
	// PriorityDefault for the default, up to PriorityMax.
	Priority int
}

// EnqueueResult is the outcome of one trigger.
type EnqueueResult struct {
	Outcome TriggerOutcome
	// Accepted is true when the run was created (Outcome TriggerCreated).
	Accepted bool
	EntryID  string
	// Superseded is the previous owner a PolicySupersede trigger took the
	// key from, if any.
	Superseded string
	// Owner is the run holding the key when the trigger created nothing.
	Owner    string
	OwnerTTL time.Duration
	SignalID string
	// Ack is how far the write reached, for a trigger that asked for
	// durable acknowledgement; nil for one that did not.
	Ack *Ack
}
