package engine

import "time"

// AcquireParams ask for a slot of a concurrency group for one delivery.
type AcquireParams struct {
	Task, Group string
	// Index says which of the task's concurrency limits the group is of
	// (0: the first): the groups of different limits are apart, whatever
	// their names.
	Index int
	RunID string
	// Token names the holder (the worker and the delivery): only it renews
	// and releases the slot.
	Token    string
	MaxRuns  int
	Strategy string // ConcurrencyRoundRobin, ConcurrencyCancelInProgress or ConcurrencyCancelNewest
	// Lease is how long the slot is held without a renewal.
	Lease time.Duration
	// Created is the run's creation time, its place in the waiting line.
	Created time.Time
}

// AcquireOutcome is what a group answered a delivery.
type AcquireOutcome string

// The answers of AcquireSlots.
const (
	AcquireHeld  AcquireOutcome = "held"  // the run holds a slot: start it
	AcquireWait  AcquireOutcome = "wait"  // the group is full: park the run
	AcquireEvict AcquireOutcome = "evict" // the run took the slot of the oldest holder, Evicted: cancel that one
	AcquireFull  AcquireOutcome = "full"  // the group is full: cancel this run
)

// AcquireResult is the answer to one AcquireParams.
type AcquireResult struct {
	Outcome AcquireOutcome
	// Holders is how many runs hold a slot of the group now.
	Holders int
	// Evicted is the run whose slot this one took (AcquireEvict).
	Evicted string
}
