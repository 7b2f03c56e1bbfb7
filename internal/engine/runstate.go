package engine

// RunState is what RunStates reads of one run.
type RunState struct {
	// Status is the run's status, "" when its record is gone.
	Status string
	// Error is why the run ended, as its record holds it ("superseded by
	// run <id>", a cancel's reason, a failure).
	Error string
}
