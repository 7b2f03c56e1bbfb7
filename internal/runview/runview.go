// Package runview is how taskq's own views of a run (the command line, the
// dashboard) describe it beyond client.RunInfo's fields: which of its
// attempts counted against its retries, and whether it may be retried.
package runview

import "github.com/taskq/taskq/pkg/client"

// CountedAttempts splits r.Attempt, the attempts the run has had, into
// those that count against its Retries+1 (those that failed, and the
// running or last one when it did not fail) and those redelivered without
// counting: given back when a worker shut down, or taken over after a
// lease lapsed. A run given back at a shutdown and then run to success by
// another worker has Attempt 2 with no retries allowed: 1 counted of at
// most 1, and 1 redelivered. Attempts that ended waiting durably (Waits)
// are neither.
func CountedAttempts(r *client.RunInfo) (counted, redelivered int) {
	counted = r.Failures
	if r.Status != client.StatusQueued && r.Status != client.StatusWaiting && r.Attempt > r.Failures+r.Waits {
		counted++ // the running or last attempt, however it ended
	}
	counted = min(counted, r.Attempt)
	return counted, max(r.Attempt-counted-r.Waits, 0)
}

// Retryable reports whether Inspector.RetryRun would retry r: it failed or
// was cancelled, and was not retried yet.
func Retryable(r *client.RunInfo) bool {
	return (r.Status == client.StatusFailed || r.Status == client.StatusCancelled) && r.RetriedBy == ""
}
