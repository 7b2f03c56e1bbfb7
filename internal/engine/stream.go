package engine

import "time"

// Delivery is one stream entry handed to a worker.
type Delivery struct {
	Task    string
	EntryID string
	RunID   string
	// Priority is the run's priority, the stream it was read from
	// (PriorityDefault, or 0 for it, up to PriorityMax).
	Priority int
	// Spec is what the entry says of the run; nil for an entry that says
	// nothing (Start then reads it from the record).
	Spec *RunSpec
	// Redelivered is set on a delivery reclaimed after its lease lapsed:
	// the entry was delivered before.
	Redelivered bool
}

// RunSpec is what a worker needs of a run to run it and record its
// outcome. None of it changes once the run is queued, so its stream entry
// carries it (see the spec in layout.go) and the start and finish scripts need not read
// it from the record.
type RunSpec struct {
	Input, Meta   []byte
	Key           string
	Strategy      Strategy
	Hold          time.Duration
	Retries       int
	Timeout       time.Duration
	Created       time.Time
	MaxDeliveries int
	Retain        time.Duration
	Retention     time.Duration
	// Fails counts the run's failed attempts before this delivery.
	Fails int
	// Attempts counts the attempts the run had begun when this entry was
	// written. Unless the run changed since, this delivery's attempt is
	// Attempts+1, which lets a worker run the handler before the attempt
	// is recorded as begun (see FinishParams.Began).
	Attempts int
}

// KeyState is the current holder of an idempotency key.
type KeyState struct {
	Key   string
	Owner string
	// TTL is the time left; 0 when the key has no expiry.
	TTL time.Duration
}
