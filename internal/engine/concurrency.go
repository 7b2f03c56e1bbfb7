package engine

// Concurrency strategies as the scripts take them (task.ConcurrencyStrategy
// has the same values).
const (
	ConcurrencyRoundRobin       = "group_round_robin"
	ConcurrencyCancelInProgress = "cancel_in_progress"
	ConcurrencyCancelNewest     = "cancel_newest"
)

// ParkedState is what a group's state says of a parked run.
type ParkedState struct {
	// Holding: the run holds a slot (or one is reserved for it) whose lease
	// has not lapsed.
	Holding bool
	// Waiting: the run is in the group's waiting line.
	Waiting bool
}

// ParkedRun is a parked run a recoverer took (TakeParked).
type ParkedRun struct {
	RunID, Task, Group string
	// Index says which of the task's concurrency limits the group is of
	// (0: the first): the groups of different limits are apart, whatever
	// their names.
	Index int
}
