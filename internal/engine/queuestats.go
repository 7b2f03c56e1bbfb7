package engine

import "time"

// QueueStat is what a task's streams hold, summed over the partitions.
type QueueStat struct {
	// Queued counts entries not yet delivered to a worker.
	Queued int64
	// InFlight counts entries delivered and not yet acknowledged: runs a
	// worker holds, or whose lease lapsed and await redelivery.
	InFlight int64
	// Oldest is when the oldest undelivered entry was added (zero when
	// none is queued).
	Oldest time.Time
}
