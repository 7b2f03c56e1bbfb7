package engine

import "time"

// ReleaseParams give back the slot a run holds in a concurrency group.
type ReleaseParams struct {
	Task, Group string
	// Index says which of the task's concurrency limits the group is of
	// (0: the first): the groups of different limits are apart, whatever
	// their names.
	Index int
	// RunID is the run whose slot is given back; "" only hands the group's
	// free slots (those whose lease lapsed) to waiting runs.
	RunID string
	// Token is the holder's, as it acquired the slot; "" releases a slot
	// still reserved for the run.
	Token   string
	MaxRuns int
	// Reserve is how long a slot handed to a waiting run stays reserved for it.
	Reserve time.Duration
}

// ReleaseResult is the outcome of one ReleaseParams.
type ReleaseResult struct {
	// Released: the token held the slot, which is free now.
	Released bool
	// Next are the waiting runs the group's free slots were reserved for,
	// in line order: put each back in its stream (Unpark).
	Next []string
}
