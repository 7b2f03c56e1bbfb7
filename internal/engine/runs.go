package engine

import "time"

// Run is a run record as stored.
type Run struct {
	ID       string
	Task     string
	Status   string
	Input    []byte
	Meta     []byte
	Key      string
	Strategy Strategy
	Hold     time.Duration
	Retain   time.Duration
	Attempt  int
	Fails    int
	// Waits counts the attempts that ended with the handler waiting
	// durably (OutcomeWait).
	Waits    int
	Retries  int
	Timeout  time.Duration
	Result   []byte
	Error    string
	Consumer string
	// RetryOf is the run this run retries, RetriedBy the run that retried
	// it ("" when none).
	RetryOf   string
	RetriedBy string
	// Waiting is why a queued run is held back before its start (a rate
	// limit, a concurrency group), "" when it is not.
	Waiting string
	// ConcurrencyGroup is the group a parked run waits in ("" once it is
	// back in its stream, or for a run never parked).
	ConcurrencyGroup string
	// Priority is the run's priority (PriorityDefault .. PriorityMax).
	Priority int
	Created  time.Time
	Started  time.Time
	Finished time.Time
	// HasAttempts, HasSignals and HasSteps say the run has an attempt
	// history, a signal stream and durable steps (its flags a, s, t), so a
	// reader need not look for the ones it has not; HasChildren that it
	// spawned children (flag d, see Children).
	HasAttempts, HasSignals, HasSteps, HasChildren bool
	// Parent is the run that spawned this one, "" for a run no run
	// spawned (see ParentOf).
	Parent string
}
