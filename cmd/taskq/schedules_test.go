package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/task"
)

// taskq schedules: create (and its typed errors as usage errors), ls and
// get in both formats, pause, resume, trigger-now and delete, with the
// exit codes of docs/cli.md.
func TestSchedulesCommands(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newTestClient(t, b)
		spec := taskdef.Spec(leaseTask.Definition())
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
		if _, err := clientlink.Store(c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
			t.Fatal(err)
		}
		cl := newCLI(t, b)
		r := cl.run("schedules", "create", "nightly", "--task", leaseTask.Name(), "--cron", "0 2 * * *",
			"--timezone", "Europe/Paris", "--input", `{"id":"n"}`, "--misfire", "catch_up", "--catch-up", "3")
		if r.code != exitOK || !strings.Contains(r.stdout, "Europe/Paris") || !strings.Contains(r.stdout, "catch up 3 within 24h") {
			t.Fatalf("create: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if r = cl.run("schedules", "create", "nightly", "--task", leaseTask.Name(), "--cron", "@daily"); r.code != exitFailure ||
			!strings.Contains(r.stderr, "schedule already exists") {
			t.Fatalf("second create: exit %d, %q", r.code, r.stderr)
		}
		if r = cl.run("schedules", "create", "bad", "--task", leaseTask.Name(), "--cron", "0 2 * *"); r.code != exitUsage ||
			!strings.Contains(r.stderr, `schedule "bad": cron:`) {
			t.Fatalf("bad cron: exit %d, %q", r.code, r.stderr)
		}
		if r = cl.run("schedules", "create", "bad", "--task", leaseTask.Name(), "--cron", "@daily", "--timezone", "Nowhere/City"); r.code != exitUsage ||
			!strings.Contains(r.stderr, `schedule "bad": timezone:`) {
			t.Fatalf("bad zone: exit %d, %q", r.code, r.stderr)
		}
		// A task nobody registered is a typo until said otherwise: refused
		// with exit 3 and nothing created, or created with
		// --allow-unregistered; a warning either way.
		const warning = `warning: task "nosuch" is not registered in namespace`
		r = cl.run("schedules", "create", "typo", "--task", "nosuch", "--cron", "@daily")
		if r.code != exitNotFound || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stderr, "--allow-unregistered") {
			t.Fatalf("unknown task: exit %d, %q", r.code, r.stderr)
		}
		if r = cl.run("schedules", "get", "typo"); r.code != exitNotFound {
			t.Fatalf("the refused schedule exists: exit %d, %q", r.code, r.stdout)
		}
		r = cl.run("schedules", "create", "early", "--task", "nosuch", "--cron", "@daily", "--allow-unregistered")
		if r.code != exitOK || !strings.Contains(r.stderr, warning) || !strings.Contains(r.stdout, "nosuch") {
			t.Fatalf("--allow-unregistered: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if r = cl.run("schedules", "delete", "early"); r.code != exitOK {
			t.Fatalf("delete early: exit %d, %q", r.code, r.stderr)
		}
		r = cl.run("schedules", "ls")
		if r.code != exitOK || !strings.Contains(r.stdout, "nightly") || !strings.Contains(r.stdout, "0 2 * * *") || !strings.Contains(r.stdout, "active") {
			t.Fatalf("ls: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if r = cl.run("schedules", "pause", "nightly", "-o", "json"); r.code != exitOK || !strings.Contains(r.stdout, `"paused": true`) {
			t.Fatalf("pause: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		r = cl.run("schedules", "ls", "-o", "json")
		var list wire.ScheduleList
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Schedules) != 1 {
			t.Fatalf("ls -o json: %v, %q", err, r.stdout)
		}
		got := list.Schedules[0]
		var in bytes.Buffer
		_ = json.Compact(&in, got.Input)
		if !got.Paused || got.Misfire.Policy != "catch_up" || got.Misfire.Max != 3 || got.NextAt == nil ||
			got.KeyExpression != task.ScheduleKeyDefault || in.String() != `{"id":"n"}` {
			t.Fatalf("ls -o json = %+v", got)
		}
		if r = cl.run("schedules", "resume", "nightly"); r.code != exitOK || !strings.Contains(r.stdout, `Resumed schedule "nightly"`) {
			t.Fatalf("resume: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		r = cl.run("schedules", "trigger-now", "nightly", "-o", "json")
		var res wire.TriggerResult
		if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || r.code != exitOK || res.RunID == "" ||
			!strings.HasPrefix(res.IdempotencyKey, "nightly@") || res.Task != leaseTask.Name() {
			t.Fatalf("trigger-now: exit %d, %q %q", r.code, r.stdout, r.stderr)
		}
		if run, err := c.Inspector().GetRun(context.Background(), res.RunID); err != nil || run.IdempotencyKey != res.IdempotencyKey {
			t.Fatalf("the run trigger-now made: %+v, %v", run, err)
		}
		if r = cl.run("schedules", "delete", "nightly"); r.code != exitOK {
			t.Fatalf("delete: exit %d, %q", r.code, r.stderr)
		}
		for _, args := range [][]string{{"get", "nightly"}, {"pause", "nightly"}, {"delete", "nightly"}, {"trigger-now", "nightly"}} {
			if r = cl.run(append([]string{"schedules"}, args...)...); r.code != exitNotFound || !strings.Contains(r.stderr, "schedule not found") {
				t.Fatalf("%v after delete: exit %d, %q", args, r.code, r.stderr)
			}
		}
	})
}
