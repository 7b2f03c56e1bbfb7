package task

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/cronspec"
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

// Validate checks s: its names, its cron expression and zone, its input
// and metadata (JSON objects, or empty), its misfire policy, and its key
// expression, which it compiles and evaluates on the schedule's next tick
// (an expression that fails on one tick would fail on every tick). Every
// failure is a *ConfigError naming the schedule and the field, matching
// ErrInvalidSchedule. client.Schedules checks a schedule so before it
// registers it.
func (s Schedule) Validate() error {
	bad := func(field, msg string, err error) error {
		return &ConfigError{Schedule: s.Name, Field: field, Message: msg, Err: err, schedule: true}
	}
	if !namePattern.MatchString(s.Name) {
		return bad("name", "must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", nil)
	}
	if !namePattern.MatchString(s.Task) {
		return bad("task", fmt.Sprintf("%q is not a task name", s.Task), nil)
	}
	spec, err := cronspec.Parse(s.Cron, s.TimeZone, s.Seconds)
	if err != nil {
		var ce *cronspec.Error
		errors.As(err, &ce)
		return bad(ce.Field, ce.Message, ce.Err)
	}
	for _, f := range []struct {
		name string
		data json.RawMessage
	}{{"input", s.Input}, {"additional_metadata", s.Metadata}} {
		t := bytes.TrimSpace(f.data)
		if len(t) == 0 || string(t) == "null" {
			continue // an empty object, as JSON null says too
		}
		if !json.Valid(t) || t[0] != '{' {
			return bad(f.name, "must be a JSON object", nil)
		}
	}
	if err := s.Misfire.check(); err != nil {
		return bad("misfire", err.Error(), nil)
	}
	expr := s.KeyExpression
	if expr == "" {
		expr = ScheduleKeyDefault
	}
	key, err := idempotency.ScheduleKey(expr)
	if err != nil {
		return bad("key_expression", err.Error(), err)
	}
	if _, err := key(emptyAsNil(s.Input), emptyAsNil(s.Metadata), s.Name, spec.Next(time.Now())); err != nil {
		return bad("key_expression", err.Error(), err)
	}
	return nil
}

// emptyAsNil is data, or nil (an empty object) when it is empty or JSON
// null.
func emptyAsNil(data json.RawMessage) json.RawMessage {
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return data
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
