package engine

import "time"

// ScheduleRecord is a schedule as stored: its definition (JSON, which the
// client reads and writes) and what the store keeps beside it.
type ScheduleRecord struct {
	Name       string
	Definition []byte
	Paused     bool
	// Cursor is the latest tick fired, or when the schedule was
	// registered or resumed if that is later: the next tick to fire is
	// after it.
	Cursor  time.Time
	Created time.Time
	Updated time.Time
}
