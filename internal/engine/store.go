package engine

import "github.com/taskq/taskq/pkg/task"

// Strategy is the task's strategy (defined once, in package task), as the
// scripts store and read it.
type Strategy = task.Strategy

// The strategies a run is stored with: the task's, or StrategyNone for a
// run without an idempotency key, which is not deduplicated. StrategyNone
// is a storage value only, never a task's configuration.
const (
	StrategyNone     Strategy = "none"
	StrategyTTL               = task.StrategyTTL
	StrategyStatus            = task.StrategyStatus
	StrategyDebounce          = task.StrategyDebounce
)

// MaxSignalsDefault bounds the signals one run may hold.
const MaxSignalsDefault = 10000

// Run statuses as stored.
const (
	StatusQueued  = "queued"
	StatusRunning = "running"
	// StatusWaiting: the run's handler waits durably (see OutcomeWait);
	// no worker holds it until it is queued again.
	StatusWaiting   = "waiting"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// IsTerminal reports whether status is final.
func IsTerminal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}
