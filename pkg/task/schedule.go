package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/taskq/taskq/pkg/idempotency"
)

// ScheduleKeyDefault is the key expression of a schedule that sets none:
// one key per schedule and tick, e.g. "nightly@2026-12-01T22:00:00Z".
const ScheduleKeyDefault = `schedule.name + "@" + string(schedule.time)`

// Bounds and defaults of a schedule's misfire policy.
const (
	// MisfireHorizonSkipDefault is how late the latest due tick of a
	// MisfireSkip schedule may still fire.
	MisfireHorizonSkipDefault = time.Minute
	// MisfireHorizonCatchUpDefault is how far back a MisfireCatchUp
	// schedule looks for missed ticks.
	MisfireHorizonCatchUpDefault = 24 * time.Hour
	// MisfireHorizonMin and MisfireHorizonMax bound Misfire.Horizon.
	MisfireHorizonMin = time.Second
	MisfireHorizonMax = 30 * 24 * time.Hour
	// MisfireMaxMax bounds Misfire.Max.
	MisfireMaxMax = 1000
	// ScheduleKeyMargin is how much longer than its horizon (Misfire.Horizon
	// or its default) a tick's key is held: a scheduler checks a tick is within the horizon just
	// before it fires it, so a scheduler paused for less than this
	// between the check and the trigger still meets the key (see
	// docs/cron.md).
	ScheduleKeyMargin = time.Hour
)

// MisfirePolicy says which of the ticks a schedule missed (no scheduler
// was running, or all were late) fire.
type MisfirePolicy string

const (
	// MisfireSkip fires only the latest due tick, and only if it is at
	// most Horizon old; the ticks before it are skipped (the default).
	MisfireSkip MisfirePolicy = "skip"
	// MisfireCatchUp fires the Max most recent due ticks no older than
	// Horizon, oldest first.
	MisfireCatchUp MisfirePolicy = "catch_up"
)

// Misfire is a schedule's misfire policy.
type Misfire struct {
	Policy MisfirePolicy // MisfireSkip ("") or MisfireCatchUp
	// Max is how many missed ticks MisfireCatchUp fires at most, in
	// [1, MisfireMaxMax]; it must be 0 under MisfireSkip.
	Max int
	// Horizon is the oldest a tick may be and still fire (default
	// MisfireHorizonSkipDefault or MisfireHorizonCatchUpDefault), in
	// [MisfireHorizonMin, MisfireHorizonMax].
	Horizon time.Duration
}

// Schedule is a cron schedule: every tick of Cron triggers Task once,
// with Input and Metadata, under a key derived from the schedule and the
// tick (KeyExpression), whatever the number of schedulers running.
type Schedule struct {
	// Name is unique in the namespace, as a task's name is.
	Name string
	// Task is the name of the task each tick triggers.
	Task string
	// Cron is a standard 5-field expression ("30 2 * * 1-5"), a descriptor
	// (@yearly, @monthly, @weekly, @daily, @hourly) or "@every <duration>"
	// (a whole number of seconds, at least 1s; its ticks fall on whole
	// multiples of the duration since the Unix epoch, so every scheduler
	// agrees on them). It may start with "CRON_TZ=<zone> ".
	Cron string
	// TimeZone is the IANA zone the fields are read in (default UTC); a
	// CRON_TZ= prefix in Cron must name the same zone.
	TimeZone string
	// Seconds makes Cron six fields, seconds first.
	Seconds bool
	// Input and Metadata are the JSON objects every run gets as its input
	// and additional_metadata (empty or null: {}).
	Input    json.RawMessage
	Metadata json.RawMessage
	// KeyExpression is a CEL expression over input, additional_metadata and
	// schedule (schedule.name, and schedule.time, the tick's nominal time
	// as a timestamp) giving each tick's idempotency key (default
	// ScheduleKeyDefault). Two ticks that get one key fire once.
	KeyExpression string
	// Misfire says which missed ticks fire.
	Misfire Misfire
	// Paused registers the schedule paused; a schedule already registered
	// keeps its state (pause and resume it with the client).
	Paused bool
}

// CompiledSchedule is a Schedule checked, its expression parsed and its
// key expression compiled. It is immutable and safe for concurrent use.
type CompiledSchedule struct {
	s     Schedule
	loc   *time.Location
	spec  cron.Schedule // nil for @every
	every time.Duration
}

// Compile checks s, parses its expressions and evaluates its key
// expression on its next tick. Every failure is a *ConfigError naming
// the schedule and the field.
func (s Schedule) Compile() (*CompiledSchedule, error) {
	bad := func(field, msg string, err error) error {
		return &ConfigError{Schedule: s.Name, Field: field, Message: msg, Err: err, schedule: true}
	}
	if !namePattern.MatchString(s.Name) {
		return nil, bad("name", "must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", nil)
	}
	if !namePattern.MatchString(s.Task) {
		return nil, bad("task", fmt.Sprintf("%q is not a task name", s.Task), nil)
	}
	cs := &CompiledSchedule{s: s}
	var err error
	if cs.loc, cs.spec, cs.every, err = parseCron(s.Cron, s.TimeZone, s.Seconds); err != nil {
		var se *ConfigError
		if errors.As(err, &se) {
			se.Schedule = s.Name
		}
		return nil, err
	}
	for _, f := range []struct {
		name string
		data *json.RawMessage
	}{{"input", &cs.s.Input}, {"additional_metadata", &cs.s.Metadata}} {
		t := bytes.TrimSpace(*f.data)
		if len(t) == 0 || string(t) == "null" {
			*f.data = nil // an empty object, as JSON null says too
			continue
		}
		if !json.Valid(t) || t[0] != '{' {
			return nil, bad(f.name, "must be a JSON object", nil)
		}
	}
	if err := s.Misfire.check(); err != nil {
		return nil, bad("misfire", err.Error(), nil)
	}
	if cs.s.KeyExpression == "" {
		cs.s.KeyExpression = ScheduleKeyDefault
	}
	key, err := idempotency.ScheduleKey(cs.s.KeyExpression)
	if err != nil {
		return nil, bad("key_expression", err.Error(), err)
	}
	// An expression that fails on the next tick would fail on every tick:
	// say so now, not at the first tick.
	if _, err := key(cs.s.Input, cs.s.Metadata, cs.s.Name, cs.Next(time.Now())); err != nil {
		return nil, bad("key_expression", err.Error(), err)
	}
	return cs, nil
}

func (m Misfire) check() error {
	switch m.Policy {
	case "", MisfireSkip:
		if m.Max != 0 {
			return errors.New("max applies to catch_up only")
		}
	case MisfireCatchUp:
		if m.Max < 1 || m.Max > MisfireMaxMax {
			return fmt.Errorf("max %d is outside [1, %d]", m.Max, MisfireMaxMax)
		}
	default:
		return fmt.Errorf("policy %q is not %q or %q", m.Policy, MisfireSkip, MisfireCatchUp)
	}
	if m.Horizon != 0 && (m.Horizon < MisfireHorizonMin || m.Horizon > MisfireHorizonMax) {
		return fmt.Errorf("horizon %s is outside [%s, %s]", m.Horizon, MisfireHorizonMin, MisfireHorizonMax)
	}
	return nil
}

// cronError is a schedule's *ConfigError on field without the schedule's
// name, which Compile fills in.
func cronError(field, msg string, err error) error {
	return &ConfigError{Field: field, Message: msg, Err: err, schedule: true}
}

// parseCron reads expr in zone (UTC when empty): its location, and either
// the parsed spec or the period of "@every".
func parseCron(expr, zone string, seconds bool) (*time.Location, cron.Schedule, time.Duration, error) {
	expr = strings.TrimSpace(expr)
	for _, prefix := range []string{"CRON_TZ=", "TZ="} {
		rest, ok := strings.CutPrefix(expr, prefix)
		if !ok {
			continue
		}
		inline, spec, _ := strings.Cut(rest, " ")
		if zone != "" && zone != inline {
			return nil, nil, 0, cronError("timezone", fmt.Sprintf("%q differs from the expression's %s%s", zone, prefix, inline), nil)
		}
		zone, expr = inline, strings.TrimSpace(spec)
	}
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil || zone == "Local" {
			return nil, nil, 0, cronError("timezone", fmt.Sprintf("%q is not an IANA time zone", zone), err)
		}
	}
	if expr == "" {
		return nil, nil, 0, cronError("cron", "is empty", nil)
	}
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		every, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || every < time.Second || every%time.Second != 0 {
			return nil, nil, 0, cronError("cron", fmt.Sprintf("%q: @every takes a whole number of seconds, at least 1s", expr), err)
		}
		return loc, nil, every, nil
	}
	opts := cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor
	if seconds {
		opts |= cron.Second
	}
	spec, err := cron.NewParser(opts).Parse(expr)
	if err != nil {
		return nil, nil, 0, cronError("cron", fmt.Sprintf("%q: %v", expr, err), err)
	}
	ss, ok := spec.(*cron.SpecSchedule)
	if !ok {
		return nil, nil, 0, cronError("cron", fmt.Sprintf("%q is not a cron expression", expr), nil)
	}
	// The parser reads the fields in time.Local unless told otherwise; a
	// schedule's zone is its own, the same on every scheduler.
	ss.Location = loc
	if ss.Next(time.Now()).IsZero() {
		return nil, nil, 0, cronError("cron", fmt.Sprintf("%q has no tick in the next five years", expr), nil)
	}
	return loc, ss, 0, nil
}

// Schedule returns the schedule as given, its key expression filled in.
func (cs *CompiledSchedule) Schedule() Schedule { return cs.s }

// Next returns the first tick strictly after t, in the schedule's zone
// (the zero time when there is none within five years).
func (cs *CompiledSchedule) Next(t time.Time) time.Time {
	if cs.spec == nil {
		n := t.UnixNano()
		d := int64(cs.every)
		next := n - n%d + d
		if n < 0 && n%d != 0 {
			next -= d
		}
		return time.Unix(0, next).In(cs.loc)
	}
	return cs.spec.Next(t.In(cs.loc))
}
