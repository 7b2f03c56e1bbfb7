// Package ticks is the scheduler's side of a cron schedule: a schedule
// compiled (checked, its cron expression parsed), which of its ticks fire
// now, and the key each tick's run gets. The client (client.Schedules) and
// the worker's scheduler share it.
package ticks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/cronspec"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// Compiled is a schedule checked (task.Schedule.Validate) and its cron
// expression parsed. It is immutable and safe for concurrent use.
type Compiled struct {
	// Schedule is the schedule as given, its key expression filled in
	// (task.ScheduleKeyDefault when it had none) and an input or metadata
	// that is empty or JSON null made nil (an empty object).
	Schedule task.Schedule
	spec     *cronspec.Spec
}

// Compile checks s and parses its cron expression. Every failure is a
// *task.ConfigError naming the schedule and the field.
func Compile(s task.Schedule) (*Compiled, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	spec, err := cronspec.Parse(s.Cron, s.TimeZone, s.Seconds)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", s.Name, err) // Validate parsed it
	}
	for _, data := range []*json.RawMessage{&s.Input, &s.Metadata} {
		if t := bytes.TrimSpace(*data); len(t) == 0 || string(t) == "null" {
			*data = nil
		}
	}
	if s.KeyExpression == "" {
		s.KeyExpression = task.ScheduleKeyDefault
	}
	return &Compiled{Schedule: s, spec: spec}, nil
}

// Next returns the first tick strictly after t, in the schedule's zone
// (the zero time when there is none within five years).
func (cs *Compiled) Next(t time.Time) time.Time { return cs.spec.Next(t) }

// Horizon is the oldest a tick of s may be and still fire: its
// Misfire.Horizon, or the default of its policy.
func Horizon(s task.Schedule) time.Duration {
	m := s.Misfire
	switch {
	case m.Horizon != 0:
		return m.Horizon
	case m.Policy == task.MisfireCatchUp:
		return task.MisfireHorizonCatchUpDefault
	}
	return task.MisfireHorizonSkipDefault
}

// KeyTTL is how long a tick's key is held: the horizon and
// task.ScheduleKeyMargin. No scheduler tries a tick older than the
// horizon, so none meets a tick's key expired.
func KeyTTL(s task.Schedule) time.Duration { return Horizon(s) + task.ScheduleKeyMargin }

// Fresh reports whether tick may still fire at now: it is at most the
// schedule's Horizon old.
func Fresh(cs *Compiled, tick, now time.Time) bool {
	return now.Sub(tick) <= Horizon(cs.Schedule)
}

// Key derives the key of the run of one tick. The key expression was
// compiled when cs was, so this finds it in the compiler's cache.
func Key(cs *Compiled, tick time.Time) (string, error) {
	s := cs.Schedule
	key, err := idempotency.ScheduleKey(s.KeyExpression)
	if err != nil {
		return "", fmt.Errorf("schedule %q: key_expression: %w", s.Name, err)
	}
	return key(s.Input, s.Metadata, s.Name, tick)
}

// dueScanLimit bounds the ticks Due looks at in one call.
const dueScanLimit = 100_000

// Due returns the ticks that fire at now, oldest first, of those after
// from (the latest tick fired, or when the schedule was registered or
// resumed): under task.MisfireSkip the latest tick in (from, now] if it is
// Fresh, under task.MisfireCatchUp the Max latest ones that are.
func Due(cs *Compiled, from, now time.Time) []time.Time {
	n := 1
	if m := cs.Schedule.Misfire; m.Policy == task.MisfireCatchUp {
		n = m.Max
	}
	lo := from
	if h := now.Add(-Horizon(cs.Schedule)).Add(-time.Nanosecond); h.After(lo) {
		lo = h
	}
	if !now.After(lo) {
		return nil
	}
	// Look back from now in windows that double, so that a schedule that
	// ticks every second and one that ticks once a month both cost a few
	// dozen steps, whatever the horizon.
	scanned := 0
	for w := time.Minute; ; w *= 2 {
		start := now.Add(-w)
		if !start.After(lo) {
			start = lo
		}
		var ticks []time.Time
		for t := cs.Next(start); !t.IsZero() && !t.After(now) && scanned < dueScanLimit; t = cs.Next(t) {
			scanned++
			ticks = append(ticks, t)
			if len(ticks) > n {
				ticks = ticks[1:]
			}
		}
		if len(ticks) == n || start.Equal(lo) || scanned >= dueScanLimit {
			return ticks
		}
	}
}
