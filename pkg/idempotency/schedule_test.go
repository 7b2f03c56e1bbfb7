package idempotency_test

import (
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/idempotency"
)

// A schedule's key expression sees schedule.name and schedule.time (a
// timestamp, RFC 3339 as a string) beside input and additional_metadata.
func TestScheduleKeySeesTheScheduleAndTick(t *testing.T) {
	c, err := idempotency.NewScheduleCompiler(idempotency.Options{})
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
		got, err := e.ScheduleKeyJSON([]byte(`{"region":"eu"}`), []byte(`{"team":"ops"}`), "nightly", tick)
		if err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", src, got, err, want)
		}
	}
}

// The schedule variable exists only for schedules: a task's expression
// that names it still fails to compile, with an ErrCompile *Error.
func TestTaskExpressionsCannotNameSchedule(t *testing.T) {
	c, err := idempotency.NewCompiler(idempotency.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Compile(`schedule.name`)
	var ce *idempotency.Error
	if !errors.As(err, &ce) {
		t.Fatalf("compile = %v, want a *Error", err)
	}
	e, err := c.Compile(`input.id`)
	if err != nil {
		t.Fatal(err)
	}
	var ee *idempotency.Error
	if _, err := e.ScheduleKeyJSON([]byte(`{"id":"1"}`), nil, "s", time.Now()); !errors.As(err, &ee) {
		t.Fatalf("ScheduleKeyJSON of a task expression = %v, want an *Error", err)
	}
}

// A schedule's key keeps the limits and typed errors of a task's.
func TestScheduleKeyKeepsTheLimits(t *testing.T) {
	c, err := idempotency.NewScheduleCompiler(idempotency.Options{MaxKeyLength: 8})
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	long, _ := c.Compile(`schedule.name + "@" + string(schedule.time)`)
	var tooLong *idempotency.Error
	if _, err := long.ScheduleKeyJSON(nil, nil, "nightly", tick); !errors.As(err, &tooLong) {
		t.Fatalf("long key = %v, want a *Error", err)
	}
	missing, _ := c.Compile(`schedule.nmae`)
	var ee *idempotency.Error
	if _, err := missing.ScheduleKeyJSON(nil, nil, "n", tick); !errors.As(err, &ee) {
		t.Fatalf("misspelt field = %v, want an *Error", err)
	}
	num, _ := c.Compile(`schedule.time.getHours()`)
	var rt *idempotency.Error
	if _, err := num.ScheduleKeyJSON(nil, nil, "n", tick); !errors.As(err, &rt) {
		t.Fatalf("int key = %v, want a *Error", err)
	}
	loop, _ := c.Compile(`[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, schedule.name + string(a+b+c)))).size() > 0 ? "k" : "j"`)
	var cost *idempotency.Error
	if _, err := loop.ScheduleKeyJSON(nil, nil, "n", tick); !errors.As(err, &cost) {
		t.Fatalf("costly key = %v, want a *Error", err)
	}
}
