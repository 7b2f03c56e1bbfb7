package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A trigger from the command line that collides is recorded with source
// cli, and suppressed ls finds it by key and by owner run.
func TestSuppressedLs(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		spec := task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000,
			BackoffInitialMs: 1000, BackoffFactor: 2, MaxDeliveries: 11}
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
		if _, err := clientlink.Store(c).RegisterTask(context.Background(), "ship", raw, true); err != nil {
			t.Fatal(err)
		}
		cli := newCLI(t, b)
		if r := cli.run("suppressed", "ls"); r.code != 0 || !strings.Contains(r.stdout, "No suppressed triggers") {
			t.Fatalf("none: %+v", r)
		}
		first := cli.run("runs", "trigger", "ship", "--input", `{"id":"1"}`, "-o", "json")
		var created struct {
			RunID string `json:"runId"`
		}
		if err := json.Unmarshal([]byte(first.stdout), &created); err != nil || created.RunID == "" {
			t.Fatalf("first trigger: %+v (%v)", first, err)
		}
		if r := cli.run("runs", "trigger", "ship", "--input", `{"id":"1"}`); r.code == 0 {
			t.Fatalf("the duplicate succeeded: %+v", r)
		}
		r := cli.run("suppressed", "ls", "--key", "ship:1")
		if r.code != 0 || !strings.Contains(r.stdout, created.RunID) || !strings.Contains(r.stdout, "cli") || !strings.Contains(r.stdout, "rejected") {
			t.Fatalf("ls --key: %+v", r)
		}
		r = cli.run("suppressed", "ls", "--owner", created.RunID, "-o", "json")
		var page struct {
			Triggers []client.SuppressedTrigger `json:"triggers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &page); err != nil || len(page.Triggers) != 1 ||
			page.Triggers[0].Source != client.SourceCLI || page.Triggers[0].Key != "ship:1" {
			t.Fatalf("ls --owner -o json: %+v (%v)", r, err)
		}
		if r := cli.run("suppressed", "ls", "--cursor", "nope"); r.code != 2 {
			t.Fatalf("a bad cursor: %+v, want exit 2", r)
		}
	})
}
