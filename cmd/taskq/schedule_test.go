package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// runs trigger --in / --at schedules a run that holds its key at once;
// runs get and runs ls say it is waiting and until when; runs reschedule
// moves it; bad flags are usage errors.
func TestRunsTriggerScheduledAndReschedule(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newTestClient(t, b)
		registerLease(t, c)
		cl := newCLI(t, b)

		r := cl.run("runs", "trigger", "lease", "--input", `{"id":"1"}`, "--in", "1h")
		if r.code != exitOK || !strings.Contains(r.stdout, "It is waiting until") || !strings.Contains(r.stdout, "(scheduled)") {
			t.Fatalf("scheduled trigger: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		at := time.Now().Add(2 * time.Hour).UTC().Truncate(time.Second)
		r = cl.run("runs", "trigger", "lease", "--input", `{"id":"2"}`, "--at", at.Format(time.RFC3339), "-o", "json")
		var v wire.TriggerResult
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &v) != nil || v.RunID == "" {
			t.Fatalf("scheduled trigger -o json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		// The duplicate is refused at once, naming the scheduled run.
		if r := cl.run("runs", "trigger", "lease", "--input", `{"id":"2"}`); r.code != exitCollision || !strings.Contains(r.stderr, v.RunID) {
			t.Fatalf("duplicate of a scheduled run: exit %d, %q", r.code, r.stderr)
		}
		r = cl.run("runs", "get", v.RunID)
		if fields := strings.Join(strings.Fields(r.stdout), " "); r.code != exitOK || !strings.Contains(fields, "Due: waiting until "+strings.Join(strings.Fields(formatTime(at)), " ")+" (scheduled)") {
			t.Fatalf("runs get of a scheduled run: exit %d\n%s", r.code, r.stdout)
		}
		r = cl.run("runs", "get", v.RunID, "-o", "json")
		var info client.RunInfo
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &info) != nil || !info.Scheduled || info.ScheduledAt == nil || !info.ScheduledAt.Equal(at) {
			t.Fatalf("runs get -o json: exit %d\n%s", r.code, r.stdout)
		}
		if r := cl.run("runs", "ls", "--status", "queued"); r.code != exitOK || strings.Count(r.stdout, "waiting until") != 2 {
			t.Fatalf("runs ls --status queued:\n%s", r.stdout)
		}
		unscheduled := triggerLease(t, c, "unscheduled")
		r = cl.run("runs", "ls", "--scheduled", "-o", "json")
		var listed []client.RunInfo
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &listed) != nil || len(listed) != 2 {
			t.Fatalf("runs ls --scheduled: exit %d\n%s", r.code, r.stdout)
		}
		for _, l := range listed {
			if !l.Scheduled || l.ID == unscheduled {
				t.Fatalf("runs ls --scheduled lists %+v", l)
			}
		}

		later := at.Add(time.Hour)
		r = cl.run("runs", "reschedule", v.RunID, "--at", later.Format(time.RFC3339), "-o", "json")
		if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &info) != nil || !info.ScheduledAt.Equal(later) {
			t.Fatalf("runs reschedule --at: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		if r := cl.run("runs", "reschedule", v.RunID, "--in", "10m"); r.code != exitOK || !strings.Contains(r.stdout, "Rescheduled run "+v.RunID+": waiting until") {
			t.Fatalf("runs reschedule --in: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}

		now := triggerLease(t, c, "3")
		if r := cl.run("runs", "reschedule", now, "--in", "1h"); r.code != exitFailure || !strings.Contains(r.stderr, "is not waiting for a scheduled time: it is queued") {
			t.Fatalf("reschedule of an unscheduled run: exit %d, %q", r.code, r.stderr)
		}
		if _, err := c.Handle(v.RunID).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		if r := cl.run("runs", "reschedule", v.RunID, "--in", "1h"); r.code != exitFailure || !strings.Contains(r.stderr, "it is cancelled") {
			t.Fatalf("reschedule of a cancelled run: exit %d, %q", r.code, r.stderr)
		}
		if r := cl.run("runs", "reschedule", "01890000-0000-7000-8000-000000000000", "--in", "1h"); r.code != exitNotFound {
			t.Fatalf("reschedule of a missing run: exit %d, %q", r.code, r.stderr)
		}

		for _, args := range [][]string{
			{"runs", "trigger", "lease", "--input", `{"id":"9"}`, "--in", "-5m"},
			{"runs", "trigger", "lease", "--input", `{"id":"9"}`, "--in", "100000h"},
			{"runs", "trigger", "lease", "--input", `{"id":"9"}`, "--at", "tomorrow"},
			{"runs", "trigger", "lease", "--input", `{"id":"9"}`, "--at", at.Format(time.RFC3339), "--in", "1h"},
			{"runs", "reschedule", now},
			{"runs", "reschedule", now, "--in", "-1h"},
		} {
			if r := cl.run(args...); r.code != exitUsage {
				t.Errorf("%v: exit %d, want %d (usage)\n%s", args, r.code, exitUsage, r.stderr)
			}
		}
		if _, err := c.Inspector().GetKey(ctx, "lease:9"); err == nil {
			t.Fatal("a refused scheduled trigger claimed its key")
		}
	})
}
