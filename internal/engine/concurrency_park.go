package engine

// ParkParams hold back one delivery whose concurrency group is full.
type ParkParams struct {
	RunID, Task, EntryID string
	// Reason is why it waits, the record's waiting field
	// (`concurrency group "acme" (2/2 running)`).
	Reason string
	// Group is the concurrency group it waits in.
	Group string
	// Index says which of the task's concurrency limits the group is of
	// (0: the first): the groups of different limits are apart, whatever
	// their names.
	Index int
	// Priority is the delivery's: its entry is in that priority's stream.
	Priority int
}

// ParkHeldBack is the result of a delivery Park held back; any other
// result says why it was dropped instead: "missing", "stale" or the run's
// terminal status.
const ParkHeldBack = "held back"
