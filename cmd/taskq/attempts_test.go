package main

import (
	"testing"

	"github.com/taskq/taskq/pkg/client"
)

// The attempt column counts what a run's retries are spent on: a run
// given back at a worker's shutdown and then run to success shows its
// redelivery apart, never more attempts than it is allowed (it showed 2/1).
func TestAttemptColumnCountsWhatRetriesAreSpentOn(t *testing.T) {
	for _, c := range []struct {
		name string
		info client.RunInfo
		want string
	}{
		{"running", client.RunInfo{Status: client.StatusRunning, Attempt: 1, Retries: 2}, "1/3"},
		{"waiting for a retry", client.RunInfo{Status: client.StatusQueued, Attempt: 1, Failures: 1, Retries: 2}, "1/3"},
		{"failed for good", client.RunInfo{Status: client.StatusFailed, Attempt: 3, Failures: 3, Retries: 2}, "3/3"},
		{"given back, queued", client.RunInfo{Status: client.StatusQueued, Attempt: 1, Retries: 0}, "0/1 +1 redelivered"},
		{"given back, then succeeded", client.RunInfo{Status: client.StatusSucceeded, Attempt: 2, Retries: 0}, "1/1 +1 redelivered"},
		{"failed once, given back, succeeded", client.RunInfo{Status: client.StatusSucceeded, Attempt: 3, Failures: 1, Retries: 1},
			"2/2 +1 redelivered"},
	} {
		if got := attempts(&c.info); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
