package engine

import "time"

// SignalResult is the outcome of Signal.
type SignalResult struct {
	Delivered bool
	RunID     string
	SignalID  string
	// Reason when not delivered: "none" (key not held), "missing",
	// "finished" or "full".
	Reason string
	// Status is the run's status when Reason is "finished".
	Status string
}

// Signal is one signal as stored.
type Signal struct {
	// Cursor is the stream position to read after this signal.
	Cursor  string
	ID      string
	Payload []byte
	// Sent is when the signal was stored (the time its Cursor names).
	Sent time.Time
}
