package idempotency

import (
	"errors"
	"testing"
	"time"
)

// A schedule's key expression sees schedule.name and schedule.time (a
// timestamp, RFC 3339 as a string) beside input and additional_metadata.
func TestScheduleKeySeesTheScheduleAndTick(t *testing.T) {
	c, err := newScheduleCompiler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 12, 1, 22, 0, 0, 0, time.FixedZone("x", 3600))
	cases := map[string]string{
		`schedule.name + "@" + string(schedule.time)`:                       "nightly@2026-12-01T21:00:00Z",
		`input.region + ":" + string(schedule.time.getHours("UTC"))`:        "eu:21",
		`additional_metadata.team + "/" + schedule.name`:                    "ops/nightly",
		`schedule.name + string(schedule.time.getFullYear("Europe/Paris"))`: "nightly2026",
	}
	for src, want := range cases {
		e, err := c.Compile(src)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got, err := e.scheduleKeyJSON([]byte(`{"region":"eu"}`), []byte(`{"team":"ops"}`), "nightly", tick)
		if err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}

// The schedule variable exists only for schedules: a task's expression
// that names it still fails to compile, with an ErrCompile *Error.
func TestTaskExpressionsCannotNameSchedule(t *testing.T) {
	c, err := NewCompiler(Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Compile(`schedule.name`)
	if !errors.Is(err, ErrCompile) {
		t.Fatalf("compile = %v, want an *Error of its kind", err)
	}
	e, err := c.Compile(`input.id`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.scheduleKeyJSON([]byte(`{"id":"1"}`), nil, "s", time.Now()); !errors.Is(err, ErrEval) {
		t.Fatalf("scheduleKeyJSON of a task expression = %v, want an *Error of its kind", err)
	}
}

// A schedule's key keeps the limits and typed errors of a task's.
func TestScheduleKeyKeepsTheLimits(t *testing.T) {
	c, err := newScheduleCompiler(Options{MaxKeyLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	long, _ := c.Compile(`schedule.name + "@" + string(schedule.time)`)
	if _, err := long.scheduleKeyJSON(nil, nil, "nightly", tick); !errors.Is(err, ErrKeyTooLong) {
		t.Fatalf("long key = %v, want an *Error of its kind", err)
	}
	missing, _ := c.Compile(`schedule.nmae`)
	if _, err := missing.scheduleKeyJSON(nil, nil, "n", tick); !errors.Is(err, ErrEval) {
		t.Fatalf("misspelt field = %v, want an *Error of its kind", err)
	}
	num, _ := c.Compile(`schedule.time.getHours()`)
	if _, err := num.scheduleKeyJSON(nil, nil, "n", tick); !errors.Is(err, ErrNotString) {
		t.Fatalf("int key = %v, want an *Error of its kind", err)
	}
	loop, _ := c.Compile(`[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, schedule.name + string(a+b+c)))).size() > 0 ? "k" : "j"`)
	if _, err := loop.scheduleKeyJSON(nil, nil, "n", tick); !errors.Is(err, ErrCostLimit) {
		t.Fatalf("costly key = %v, want an *Error of its kind", err)
	}
}
