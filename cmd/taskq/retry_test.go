package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// registerLease publishes leaseTask's definition as its worker would.
func registerLease(t *testing.T, c *client.Client) {
	t.Helper()
	spec := taskdef.Spec(leaseTask.Definition())
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
	if _, err := clientlink.Store(c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		t.Fatal(err)
	}
}

// runs retry creates a linked run for a cancelled one, and exits per the
// exit-code table where it cannot: 6 not ended, 4 a held key naming its
// owner, 1 already retried, 3 no such run.
func TestRunsRetry(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		registerLease(t, c)
		cl := newCLI(t, b)
		first := triggerLease(t, c, "1")
		if r := cl.run("runs", "retry", first); r.code != exitPending || !strings.Contains(r.stderr, "is queued: only a failed or cancelled run can be retried") {
			t.Fatalf("retry of a queued run: exit %d, %q", r.code, r.stderr)
		}
		if _, err := c.Handle(first).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		r := cl.run("runs", "retry", first, "-o", "json")
		var v struct {
			RunID, RetryOf, IdempotencyKey, Outcome string
		}
		if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != exitOK || v.RetryOf != first || v.IdempotencyKey != "lease:1" || v.Outcome != "created" {
			t.Fatalf("runs retry: exit %d, %v, %s %q", r.code, err, r.stdout, r.stderr)
		}
		if r := cl.run("runs", "get", v.RunID); r.code != exitOK || !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "Retry of: "+first) {
			t.Fatalf("runs get of the retry: exit %d\n%s", r.code, r.stdout)
		}
		if r := cl.run("runs", "get", first); !strings.Contains(strings.Join(strings.Fields(r.stdout), " "), "Retried by: "+v.RunID) {
			t.Fatalf("runs get of the original:\n%s", r.stdout)
		}
		if r := cl.run("runs", "retry", first); r.code != exitFailure || !strings.Contains(r.stderr, "already retried by run "+v.RunID) {
			t.Fatalf("a second retry: exit %d, %q", r.code, r.stderr)
		}

		// The retry holds lease:1: retrying another cancelled run of that
		// key is a duplicate naming it.
		if _, err := c.Handle(v.RunID).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		third := triggerLease(t, c, "1")
		r = cl.run("runs", "retry", v.RunID)
		if r.code != exitCollision || !strings.Contains(r.stderr, fmt.Sprintf("key %q is held by run %s", "lease:1", third)) {
			t.Fatalf("retry under a held key: exit %d, %q", r.code, r.stderr)
		}
		if r := cl.run("runs", "retry", "no-such-run"); r.code != exitNotFound {
			t.Fatalf("retry of a missing run: exit %d, %q", r.code, r.stderr)
		}
	})
}

// runs ls pages with --cursor (printed on stderr while more follow) and
// filters by key, input field and time.
func TestRunsLsCursorAndFilters(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		cl := newCLI(t, b)
		var ids []string
		for i := range 5 {
			ids = append([]string{triggerLease(t, c, fmt.Sprint(i))}, ids...)
		}
		list := func(args ...string) ([]string, string, result) {
			r := cl.run(append([]string{"runs", "ls", "-o", "json"}, args...)...)
			var runs []struct{ ID string }
			if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil && r.code == exitOK {
				t.Fatalf("runs ls %v: %v\n%s", args, err, r.stdout)
			}
			var got []string
			for _, run := range runs {
				got = append(got, run.ID)
			}
			_, next, _ := strings.Cut(strings.TrimSpace(r.stderr), "next page: --cursor ")
			return got, next, r
		}
		var got []string
		cursor := ""
		for pages := 0; pages < 10; pages++ {
			page, next, r := list("--limit", "2", "--cursor", cursor)
			if r.code != exitOK || len(page) > 2 {
				t.Fatalf("page %d: exit %d, %v, %q", pages, r.code, page, r.stderr)
			}
			got = append(got, page...)
			if cursor = next; cursor == "" {
				break
			}
		}
		if strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Fatalf("paged %v, want %v", got, ids)
		}
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--where", "input.id=3"}, ids[1:2]},
			{[]string{"--key", "lease:4"}, ids[:1]},
			{[]string{"--since", "1h"}, ids},
			{[]string{"--until", "1h"}, nil},
		} {
			if got, _, r := list(tc.args...); r.code != exitOK || strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("runs ls %v: exit %d, %v, want %v (%q)", tc.args, r.code, got, tc.want, r.stderr)
			}
		}
		if r := cl.run("keys", "ls", "--task", "nosuch"); r.code != exitNotFound || !strings.Contains(r.stderr, `no task "nosuch"`) {
			t.Errorf("keys ls --task nosuch: exit %d, %q", r.code, r.stderr)
		}
		if r := cl.run("keys", "ls", "--task", leaseTask.Name()); r.code != exitOK {
			t.Errorf("keys ls --task %s: exit %d, %q", leaseTask.Name(), r.code, r.stderr)
		}
		for _, args := range [][]string{{"--where", "id=3"}, {"--cursor", "nope"}, {"--since", "yesterday"}, {"--since", "1h", "--until", "2h"}} {
			if _, _, r := list(args...); r.code != exitUsage {
				t.Errorf("runs ls %v: exit %d, want %d (%q)", args, r.code, exitUsage, r.stderr)
			}
		}
	})
}
