package engine

import "time"

// RescheduleResult is the outcome of Reschedule.
type RescheduleResult struct {
	// Moved is true when the run was waiting for its due time and now
	// waits for the new one.
	Moved bool
	// Previous is the due time it had (when Moved).
	Previous time.Time
	// Why says why nothing was moved: "missing", "running", a terminal
	// status, "queued" (due already), "retrying" or "debouncing".
	Why string
}
