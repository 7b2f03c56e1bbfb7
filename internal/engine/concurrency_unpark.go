package engine

// UnparkParams name a parked run to put back in its task's stream.
type UnparkParams struct {
	RunID, Task string
}

// The results of Unpark besides the run's terminal status.
const (
	UnparkQueued    = "queued"     // back in its stream
	UnparkNotParked = "not parked" // left alone
	UnparkMissing   = "missing"    // no record
)
