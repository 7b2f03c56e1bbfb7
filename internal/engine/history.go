package engine

import "time"

// Attempt is one entry of a run's attempt history as stored.
type Attempt struct {
	Number   int
	Outcome  string
	Began    time.Time
	Ended    time.Time
	Consumer string
	Error    string
}

// Parts is what ReadParts found of a run besides its record.
type Parts struct {
	// Attempts is the run's attempt history, oldest first (at most
	// MaxAttemptRecords).
	Attempts []Attempt
	// Signals and Steps count the run's signals and durable steps.
	Signals, Steps int64
}

// Step is one durable step of a run as stored: its name and result (JSON).
type Step struct {
	Name   string
	Result []byte
}

// Outcomes of an attempt in a run's attempt history (Attempt.Outcome).
const (
	AttemptFailed = "failed" // the run failed with it
	AttemptRetry  = "retry"  // it failed and a retry was scheduled
	AttemptLapsed = "lapsed" // its lease lapsed and the run was delivered again
	// AttemptRequeued: its worker gave the run back to the queue as it
	// shut down (Requeue).
	AttemptRequeued = "requeued"
)
