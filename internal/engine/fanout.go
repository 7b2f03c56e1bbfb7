package engine

import (
	"fmt"
	"time"
)

// FanoutGrace is how long a fan-out stays pending before a recoverer takes
// it over. An ingester finishes its fan-out within its operation timeout
// (5s by default), so a recoverer rarely repeats the work of a live one,
// which would be harmless anyway.
const FanoutGrace = 30 * time.Second

// FanoutPendingError says an event is stored but its fan-out could not be
// finished: Redis refused or did not answer a later step. Nothing is lost:
// the fan-out stays pending, and a worker finishes it once it has been so
// for FanoutGrace, every task getting exactly one run or recorded
// collision. Pushing the event again would store a second event.
type FanoutPendingError struct {
	EventID string
	Err     error
}

func (e *FanoutPendingError) Error() string {
	return fmt.Sprintf("event %s is stored but its fan-out is pending, for a worker to finish after %s: %v",
		e.EventID, FanoutGrace, e.Err)
}

// Unwrap returns what stopped the fan-out.
func (e *FanoutPendingError) Unwrap() error { return e.Err }

// FanoutStep names a point between the steps of a fan-out, for
// FanoutHooks.
type FanoutStep int

// The points FanoutHooks.After is called at.
const (
	// FanoutStored: step 1 is written, no task triggered yet.
	FanoutStored FanoutStep = iota + 1
	// FanoutTriggered: a call of step 2 was answered.
	FanoutTriggered
)

// FanoutHooks let tests stop a fan-out in steps between two steps, where
// an ingester may die (internal/faulttest kills its process there). A
// Store has none unless a test sets them.
type FanoutHooks struct {
	// Steps sends every fan-out through the steps, even when all its runs
	// live in the event's slot.
	Steps bool
	// TriggersPerCall bounds the tasks of one call of step 2 (0:
	// MaxItemsPerCall), so that a fan-out can stop between two triggers.
	TriggersPerCall int
	// After, when set, is called after step 1 (FanoutStored, triggered 0)
	// and after each call of step 2 (FanoutTriggered, with how many tasks
	// have been triggered so far). An error stops the fan-out there,
	// pending: the push or the recovery fails with a *FanoutPendingError
	// wrapping it.
	After func(step FanoutStep, eventID string, triggered int) error
}
