package runview_test

import (
	"testing"

	"github.com/taskq/taskq/internal/runview"
	"github.com/taskq/taskq/pkg/client"
)

func TestCountedAttempts(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		r                    client.RunInfo
		counted, redelivered int
	}{
		{"never started", client.RunInfo{Status: client.StatusQueued}, 0, 0},
		{"running, first attempt", client.RunInfo{Status: client.StatusRunning, Attempt: 1}, 1, 0},
		{"given back, then succeeded", client.RunInfo{Status: client.StatusSucceeded, Attempt: 2}, 1, 1},
		{"failed twice, waiting for a retry", client.RunInfo{Status: client.StatusQueued, Attempt: 2, Failures: 2}, 2, 0},
		{"failed once, lapsed once, running", client.RunInfo{Status: client.StatusRunning, Attempt: 3, Failures: 1}, 2, 1},
		{"failed on its last attempt", client.RunInfo{Status: client.StatusFailed, Attempt: 2, Failures: 2}, 2, 0},
		{"waiting after two waits", client.RunInfo{Status: client.StatusWaiting, Attempt: 2, Waits: 2}, 0, 0},
		{"succeeded after three waits and a lapse", client.RunInfo{Status: client.StatusSucceeded, Attempt: 5, Waits: 3}, 1, 1},
	} {
		if c, r := runview.CountedAttempts(&tc.r); c != tc.counted || r != tc.redelivered {
			t.Errorf("%s: counted %d, redelivered %d; want %d, %d", tc.name, c, r, tc.counted, tc.redelivered)
		}
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		r    client.RunInfo
		want bool
	}{
		{client.RunInfo{Status: client.StatusFailed}, true},
		{client.RunInfo{Status: client.StatusCancelled}, true},
		{client.RunInfo{Status: client.StatusFailed, RetriedBy: "r2"}, false},
		{client.RunInfo{Status: client.StatusSucceeded}, false},
		{client.RunInfo{Status: client.StatusQueued}, false},
		{client.RunInfo{Status: client.StatusRunning}, false},
	} {
		if got := runview.Retryable(&tc.r); got != tc.want {
			t.Errorf("Retryable(%s, retried by %q) = %v, want %v", tc.r.Status, tc.r.RetriedBy, got, tc.want)
		}
	}
}
