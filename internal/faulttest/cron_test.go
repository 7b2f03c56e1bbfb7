package faulttest_test

import (
	"context"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// cronTicksEnv overrides how many ticks TestCronTicksFireOnceThroughKillAndPause
// runs for (default 60), for a longer soak.
const cronTicksEnv = "TASKQ_FAULT_CRON_TICKS"

// Three worker processes run the scheduler of one "@every 1s" schedule.
// A third of the way in one is killed (SIGKILL); at half way another is
// stopped (SIGSTOP), and continued (SIGCONT) at two thirds, with its
// view of the schedule ten seconds old. Every tick of the run fires
// exactly once: none is missed (two schedulers are always up, and
// catch-up covers a late one), none fires twice (the key claim meets
// the stopped scheduler's late triggers, and the cursor bounds what it
// tries).
func TestCronTicksFireOnceThroughKillAndPause(t *testing.T) {
	t.Parallel()
	ticks := 60
	if v := os.Getenv(cronTicksEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 6 {
			t.Fatalf("$%s %q: want a number of ticks, at least 6", cronTicksEnv, v)
		}
		ticks = n
	}
	cl := newCluster(t, faulttest.TaskConfig{})
	ctx := context.Background()
	sched := task.Schedule{Name: "every-second", Task: faulttest.TaskPlain, Cron: "@every 1s",
		Input:   []byte(`{"op":"cron","key":"tick"}`),
		Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 30, Horizon: time.Minute}}
	var procs []*faulttest.Proc
	for range 3 {
		procs = append(procs, cl.worker(func(c *faulttest.WorkerConfig) { c.Schedules = []task.Schedule{sched} }))
	}
	killed, paused := procs[0], procs[1]
	start := time.Now()
	at := func(n int) time.Time { return start.Add(time.Duration(n) * time.Second) }
	sleepUntil := func(t time.Time) { time.Sleep(time.Until(t)) }

	sleepUntil(at(ticks / 3))
	killed.Kill()
	sleepUntil(at(ticks / 2))
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	sleepUntil(at(2 * ticks / 3))
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	sleepUntil(at(ticks))
	end := time.Now()

	// Every tick up to end is due by now; wait until the last has fired
	// (or the deadline passes: then the check names what is missing).
	last := end.Truncate(time.Second)
	deadline := time.Now().Add(20 * time.Second)
	var runs map[string]int
	for {
		runs = cronRuns(t, cl.c, sched.Name)
		if runs[cronKey(sched.Name, last)] > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range procs[1:] {
		p.Stop(5 * time.Second)
	}
	runs = cronRuns(t, cl.c, sched.Name)

	// The window: from the first tick fired to the last, which is at
	// least the last tick due at end (the schedulers ran on while they
	// were stopped): every tick in it fired exactly once.
	var fired []time.Time
	for k := range runs {
		tick, err := time.Parse(time.RFC3339, k[len(sched.Name)+1:])
		if err != nil {
			t.Fatalf("a run of key %q, not a tick's", k)
		}
		fired = append(fired, tick)
	}
	if len(fired) == 0 {
		t.Fatal("no tick fired")
	}
	sort.Slice(fired, func(i, j int) bool { return fired[i].Before(fired[j]) })
	first, final := fired[0], fired[len(fired)-1]
	if first.After(start.Add(2 * time.Second)) {
		t.Errorf("first tick fired %s, %s after the schedulers were up", first, first.Sub(start))
	}
	if final.Before(last) {
		t.Errorf("last tick fired %s, before %s, the last due when the run ended", final, last)
	}
	n := 0
	for tick := first; !tick.After(final); tick = tick.Add(time.Second) {
		n++
		if c := runs[cronKey(sched.Name, tick)]; c != 1 {
			t.Errorf("tick %s fired %d times, want exactly once", tick.Format(time.RFC3339), c)
		}
	}
	if n != len(runs) {
		t.Errorf("%d keys of runs for %d ticks", len(runs), n)
	}
	if n < ticks-2 {
		t.Errorf("the window held %d ticks, want about %d", n, ticks)
	}
	sup, err := cl.c.Inspector().ListSuppressed(ctx, client.ListOptions{Limit: client.ListLimitMax})
	if err != nil {
		t.Fatal(err)
	}
	dups := 0
	for _, s := range sup.Items {
		if s.Source == client.SourceSchedule {
			dups++
		}
	}
	t.Logf("%d ticks fired once each; %d later firings by other schedulers met the tick's key", n, dups)
}

func cronKey(name string, tick time.Time) string {
	return name + "@" + tick.UTC().Format(time.RFC3339)
}

// cronRuns counts the runs of TaskPlain by idempotency key.
func cronRuns(t *testing.T, c *client.Client, name string) map[string]int {
	t.Helper()
	out := map[string]int{}
	o := client.ListOptions{Task: faulttest.TaskPlain, Limit: client.ListLimitMax}
	for range 1000 {
		page, err := c.Inspector().ListRuns(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Items {
			out[r.IdempotencyKey]++
		}
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			return out
		}
	}
	t.Fatal("too many pages of runs")
	return nil
}
