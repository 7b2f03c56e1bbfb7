package engine

// Priority orders a task's queued runs: each task has a queue per
// priority, and workers read a task's higher priorities first. Pure
// priority would starve the lowest, so a lower priority has a turn once
// PriorityBound runs of a higher one were read while it waited: per task
// and partition, a run at the head of its priority's queue is read after
// at most PriorityBound+1 runs of higher priorities (ReadByPriority).
const (
	// PriorityDefault is a run's priority when none is given: the lowest.
	PriorityDefault = 1
	// PriorityMax is the highest priority.
	PriorityMax = 3
	// PriorityBound is how many runs of a higher priority a worker reads
	// while a lower priority waits, before that priority's turn.
	PriorityBound = 10
)
