package task_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/task"
)

func compile(t *testing.T, s task.Schedule) *task.CompiledSchedule {
	t.Helper()
	if s.Name == "" {
		s.Name = "nightly"
	}
	if s.Task == "" {
		s.Task = "report"
	}
	cs, err := s.Compile()
	if err != nil {
		t.Fatalf("Compile(%+v): %v", s, err)
	}
	return cs
}

// Bad schedules fail with a *ConfigError naming the schedule and the
// field, matching ErrInvalidSchedule.
func TestScheduleErrorsNameTheField(t *testing.T) {
	cases := []struct {
		s     task.Schedule
		field string
	}{
		{task.Schedule{Name: "bad name!", Task: "t", Cron: "* * * * *"}, "name"},
		{task.Schedule{Name: "s", Task: "", Cron: "* * * * *"}, "task"},
		{task.Schedule{Name: "s", Task: "t", Cron: ""}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "61 * * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@fortnightly"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@every 500ms"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@every soon"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "0 0 30 2 *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", TimeZone: "Mars/Olympus"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "CRON_TZ=Nowhere * * * * *"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "CRON_TZ=Europe/Paris * * * * *", TimeZone: "UTC"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Input: []byte(`[1]`)}, "input"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Metadata: []byte(`{`)}, "additional_metadata"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `schedule.name +`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `schedule.nmae`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `1`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: "retry"}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Max: 3}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 1, Horizon: time.Millisecond}}, "misfire"},
	}
	for _, c := range cases {
		_, err := c.s.Compile()
		var se *task.ConfigError
		if !errors.As(err, &se) || !errors.Is(err, task.ErrInvalidSchedule) || errors.Is(err, task.ErrInvalidConfig) ||
			!strings.HasPrefix(err.Error(), fmt.Sprintf("schedule %q: %s: ", c.s.Name, c.field)) {
			t.Fatalf("%+v: err = %v, want a schedule's *ConfigError", c.s, err)
		}
		if se.Field != c.field || se.Schedule != c.s.Name {
			t.Fatalf("%+v: error names schedule %q field %q (%v), want %q %q", c.s, se.Schedule, se.Field, err, c.s.Name, c.field)
		}
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
	next := func(cs *task.CompiledSchedule, from time.Time, n int) []time.Time {
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
