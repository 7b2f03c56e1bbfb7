package ticks_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/task"
)

func compile(t *testing.T, s task.Schedule) *ticks.Compiled {
	t.Helper()
	if s.Name == "" {
		s.Name = "nightly"
	}
	if s.Task == "" {
		s.Task = "report"
	}
	cs, err := ticks.Compile(s)
	if err != nil {
		t.Fatalf("Compile(%+v): %v", s, err)
	}
	return cs
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// A tick is fresh while it is at most the horizon old.
func TestFresh(t *testing.T) {
	cs := compile(t, task.Schedule{Cron: "* * * * *", Misfire: task.Misfire{Horizon: time.Minute}})
	tick := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	if !ticks.Fresh(cs, tick, tick.Add(time.Minute)) || ticks.Fresh(cs, tick, tick.Add(time.Minute+time.Nanosecond)) {
		t.Fatal("Fresh does not end at the horizon")
	}
}

// After a gap, Skip fires only the latest tick and only while it is
// within the horizon; CatchUp{N} fires the N latest, oldest first.
func TestDueAfterAGap(t *testing.T) {
	from := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
	now := from.Add(10*time.Minute + 20*time.Second) // ticks 10:01 ... 10:10 were missed
	skip := compile(t, task.Schedule{Cron: "* * * * *"})
	if got := ticks.Due(skip, from, now); !equalTimes(got, []time.Time{from.Add(10 * time.Minute)}) {
		t.Fatalf("skip: due %v, want only 10:10", got)
	}
	late := compile(t, task.Schedule{Cron: "*/10 * * * *", Misfire: task.Misfire{Horizon: 10 * time.Second}})
	if got := ticks.Due(late, from, now); len(got) != 0 {
		t.Fatalf("skip past the horizon: due %v, want none", got)
	}
	catch := compile(t, task.Schedule{Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 3}})
	want := []time.Time{from.Add(8 * time.Minute), from.Add(9 * time.Minute), from.Add(10 * time.Minute)}
	if got := ticks.Due(catch, from, now); !equalTimes(got, want) {
		t.Fatalf("catch up 3: due %v, want %v", got, want)
	}
	few := compile(t, task.Schedule{Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 100}})
	if got := ticks.Due(few, from, now); len(got) != 10 || !got[0].Equal(from.Add(time.Minute)) {
		t.Fatalf("catch up 100: due %v, want the 10 missed", got)
	}
	if got := ticks.Due(catch, now, now); len(got) != 0 {
		t.Fatalf("nothing new: due %v", got)
	}
	// A tick older than the horizon never fires, however many are asked
	// for: no scheduler tries a tick whose key may have expired.
	short := compile(t, task.Schedule{Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 100, Horizon: 150 * time.Second}})
	if got := ticks.Due(short, from, now); len(got) != 3 || !got[0].Equal(from.Add(8*time.Minute)) {
		t.Fatalf("catch up within 150s of 10:10:20: due %v, want 10:08, 10:09 and 10:10", got)
	}
	if ticks.KeyTTL(short.Schedule) != 150*time.Second+task.ScheduleKeyMargin {
		t.Fatalf("KeyTTL = %s", ticks.KeyTTL(short.Schedule))
	}
	// A gap of a year on a one-second schedule looks at a bounded number
	// of ticks.
	every := compile(t, task.Schedule{Cron: "@every 1s", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 5, Horizon: 30 * 24 * time.Hour}})
	got := ticks.Due(every, from.AddDate(-1, 0, 0), now)
	if len(got) != 5 || !got[4].Equal(now) {
		t.Fatalf("@every 1s after a year: due %v", got)
	}
}

// The default key names the schedule and the tick in RFC 3339 (UTC).
func TestScheduleDefaultKey(t *testing.T) {
	cs := compile(t, task.Schedule{Name: "nightly", Cron: "0 2 * * *", TimeZone: "Europe/Paris"})
	tick := cs.Next(time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC))
	key, err := ticks.Key(cs, tick)
	if err != nil || key != "nightly@2026-06-02T00:00:00Z" {
		t.Fatalf("key = %q, %v", key, err)
	}
	if cs.Schedule.KeyExpression != task.ScheduleKeyDefault {
		t.Fatalf("key expression = %q", cs.Schedule.KeyExpression)
	}
}

// The accepted forms: five fields, descriptors, @every, CRON_TZ= or a
// time zone field, and six fields with Seconds.
func TestScheduleForms(t *testing.T) {
	at := time.Date(2026, 6, 1, 10, 17, 30, 0, time.UTC)
	cases := []struct {
		s    task.Schedule
		want time.Time
	}{
		{task.Schedule{Cron: "*/5 * * * *"}, time.Date(2026, 6, 1, 10, 20, 0, 0, time.UTC)},
		{task.Schedule{Cron: "@hourly"}, time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "@daily"}, time.Date(2026, 6, 2, 0, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "@every 1s"}, time.Date(2026, 6, 1, 10, 17, 31, 0, time.UTC)},
		{task.Schedule{Cron: "@every 1h"}, time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "0 9 * * *", TimeZone: "Europe/Paris"}, time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "CRON_TZ=Europe/Paris 0 9 * * *"}, time.Date(2026, 6, 2, 7, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "TZ=Asia/Tokyo 0 20 * * *", TimeZone: "Asia/Tokyo"}, time.Date(2026, 6, 1, 11, 0, 0, 0, time.UTC)},
		{task.Schedule{Cron: "45 * * * * *", Seconds: true}, time.Date(2026, 6, 1, 10, 17, 45, 0, time.UTC)},
	}
	for _, c := range cases {
		if got := compile(t, c.s).Next(at); !got.Equal(c.want) {
			t.Fatalf("%+v: Next(%s) = %s, want %s", c.s, at, got.UTC(), c.want)
		}
	}
}

// Ticks follow the schedule's zone across daylight saving time: on the
// night clocks go forward a wall time that does not exist has no tick;
// on the night they go back, a wall time that happens twice ticks twice
// (two instants, so two keys).
func TestNextTicksAcrossDST(t *testing.T) {
	ny, _ := time.LoadLocation("America/New_York")
	next := func(cs *ticks.Compiled, from time.Time, n int) []time.Time {
		var out []time.Time
		for t := from; len(out) < n; {
			t = cs.Next(t)
			out = append(out, t.UTC())
		}
		return out
	}
	spring := compile(t, task.Schedule{Cron: "30 2 * * *", TimeZone: "America/New_York"})
	got := next(spring, time.Date(2026, 3, 7, 12, 0, 0, 0, ny), 2)
	want := []time.Time{time.Date(2026, 3, 9, 6, 30, 0, 0, time.UTC), time.Date(2026, 3, 10, 6, 30, 0, 0, time.UTC)}
	if !equalTimes(got, want) {
		t.Fatalf("spring forward: ticks %v, want %v (no 02:30 on 8 March)", got, want)
	}
	fall := compile(t, task.Schedule{Cron: "30 1 * * *", TimeZone: "America/New_York"})
	got = next(fall, time.Date(2026, 10, 31, 12, 0, 0, 0, ny), 3)
	want = []time.Time{
		time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), // 01:30 EDT
		time.Date(2026, 11, 1, 6, 30, 0, 0, time.UTC), // 01:30 EST
		time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC),
	}
	if !equalTimes(got, want) {
		t.Fatalf("fall back: ticks %v, want %v", got, want)
	}
	k1, _ := ticks.Key(fall, want[0])
	k2, _ := ticks.Key(fall, want[1])
	if k1 == k2 {
		t.Fatalf("the two 01:30 ticks share key %q", k1)
	}
}
