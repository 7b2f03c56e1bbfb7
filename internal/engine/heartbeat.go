package engine

// Lease is a delivery a worker is running.
type Lease struct {
	EntryID string
	RunID   string
	Attempt int
	// Priority is the delivery's: its entry is in that priority's stream.
	Priority int
}

// LeaseState is what a heartbeat learned of one lease.
type LeaseState int

// Lease states reported by Heartbeat.
const (
	LeaseLost     LeaseState = 0 // another consumer took the delivery
	LeaseHeld     LeaseState = 1 // extended
	LeaseFinished LeaseState = 2 // the run was cancelled or ended
	LeaseStale    LeaseState = 3 // a newer attempt owns the run
)

// LeaseReport is what a heartbeat learned of one lease.
type LeaseReport struct {
	State LeaseState
	// Reason is the run's error when State is LeaseFinished: why it was
	// cancelled ("superseded by run <id>", ...).
	Reason string
}
