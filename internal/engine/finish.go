package engine

import "time"

// Outcome is what an attempt reports.
type Outcome string

// Outcomes of an attempt.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeRetry     Outcome = "retry"
	// OutcomeWait suspends the run: its handler waits durably (a sleep, a
	// signal) and gives its slot back. The run's status becomes
	// StatusWaiting until RetryAt, or until a signal when Payload (what it
	// waits for, shown as the run's Waiting) starts with WaitSignalPrefix;
	// then it is queued again and its handler replays. A wait is not a
	// failure and does not count toward the run's maximum deliveries.
	OutcomeWait Outcome = "wait"
)

// What a waiting run waits for (its Waiting) starts with one of these
// when a wake ends its wait before its due time: a signal to the run, an
// event of the key it waits for, or the end of one of its children (each
// woken by Runs.WakeRuns).
const (
	WaitSignalPrefix   = "signal"
	WaitEventPrefix    = "event"
	WaitChildrenPrefix = "children"
)

// FinishParams report the end of an attempt.
type FinishParams struct {
	RunID   string
	Attempt int
	Outcome Outcome
	// Payload is the result JSON on success, the error message otherwise.
	Payload []byte
	// RetryAt is when a retried run is queued again, or when a waiting run
	// wakes (OutcomeWait).
	RetryAt time.Time
	Now     time.Time
	// Task, EntryID and Spec come from the delivery and its start. With
	// them, the finish script need not read from the record what does not
	// change while a run is queued or running; without them it does.
	Task    string
	EntryID string
	Spec    *RunSpec
	// Priority is the delivery's: its entry is in that priority's stream.
	Priority int
	// Began, when set, begins the attempt in the same write as its
	// outcome, for a handler that ran before the attempt was recorded as
	// begun (Start was never called for the delivery): Attempt is then the
	// delivery's Spec.Attempts+1, and the write happens only if the run is
	// still queued with EntryID and has begun no attempt since the entry
	// was written. Needs Task, EntryID and Spec. Consumer is recorded as the
	// attempt's worker.
	Began    time.Time
	Consumer string
}

// FinishResult says whether the outcome was recorded.
type FinishResult struct {
	Written bool
	// Status is the run's status after a write; otherwise why nothing was
	// written: "missing", "stale" or the status the run already had.
	Status string
}

// withDelivery says whether p carries the delivery's fields, which the
// finish script then need not read from the record.

// EventWaiter is a run's registration as waiting for an event of EventKey
// (Engine.AddEventWaiter).
type EventWaiter struct {
	EventKey, RunID string
	// Since is when the run registered: it has looked through the key's
	// events up to then.
	Since time.Time
	// Registration is the registration as stored, which ForgetEventWaiters
	// compares.
	Registration string
}

// EventWakeGrace is how long the process that pushed an event has to wake
// the runs waiting for its key before a worker's janitor wakes them
// (RecoverEventWaiters).
const EventWakeGrace = 30 * time.Second

// EventClockSkew is how far apart the clocks of a worker that registers a
// run and of an ingester that stamps an event may be: an event stamped up
// to this much before a run's registration may be one it has not seen.
const EventClockSkew = 2 * time.Second
