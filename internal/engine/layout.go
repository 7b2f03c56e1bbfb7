package engine

// The source an event's suppressed trigger records in its origin:
// "event:<event id>".
const sourceEventPrefix = "event:"

// MaxAttemptRecords bounds a run's attempt history: past it, the oldest
// entries are trimmed (XADD MAXLEN), so a run retried without end holds
// its latest MaxAttemptRecords attempts.
//
//taskq:lua const
const MaxAttemptRecords = 100
