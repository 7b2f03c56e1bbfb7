package main

import (
	"context"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
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
		{"failed, not retryable", client.RunInfo{Status: client.StatusFailed, Attempt: 1, Retries: 3}, "1/4"},
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

// A redis:// URL of one node of a cluster is refused, naming the
// redis+cluster:// URL; --help lists the schemes --redis accepts.
func TestRedisFlagRefusesAClusterNodeAndListsSchemes(t *testing.T) {
	t.Parallel()
	b := redistest.Cluster(t)
	seeds, _, _ := strings.Cut(strings.TrimPrefix(b.URL, "redis+cluster://"), "/")
	node, _, _ := strings.Cut(seeds, ",")
	r := runWith(context.Background(), invocation{}, "--redis", "redis://"+node+"/0", "--namespace", b.Namespace, "keys", "ls")
	if r.code == exitOK || !strings.Contains(r.stderr, "redis+cluster://"+node) {
		t.Fatalf("keys ls with redis:// to cluster node %s: exit %d, stderr %q; want a refusal naming redis+cluster://", node, r.code, r.stderr)
	}
	h := runWith(context.Background(), invocation{}, "--help")
	for _, s := range []string{"rediss://", "unix://", "redis+cluster://", "rediss+cluster://"} {
		if !strings.Contains(h.stdout, s) {
			t.Errorf("--help does not list %s for --redis:\n%s", s, h.stdout)
		}
	}
}
