package engine

import "time"

// StartParams identify a delivery a worker is about to run.
type StartParams struct {
	RunID    string
	Task     string
	EntryID  string
	Consumer string
	Now      time.Time
}

// StartResult is the outcome of Start.
type StartResult struct {
	Started bool
	// Reason says why the delivery was not started: "missing", "stale",
	// "exhausted" or the run's terminal status.
	Reason string
	// Error is the run's error when Reason is its terminal status (for a
	// cancelled run, why: "superseded by run <id>").
	Error   string
	Attempt int
	// Spec is the run to run (input, key, retries, failed attempts, ...),
	// as the delivery or, lacking it, the record said; set when Started.
	// FinishParams takes it back.
	Spec *RunSpec
}
