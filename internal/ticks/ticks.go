// Package ticks is the scheduler's side of a cron schedule: which of a
// compiled schedule's ticks fire now, and the key each tick's run gets.
// The client (Schedules.TriggerNow) and the worker's scheduler share it.
package ticks

import (
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

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
func Fresh(cs *task.CompiledSchedule, tick, now time.Time) bool {
	return now.Sub(tick) <= Horizon(cs.Schedule())
}

// Key derives the key of the run of one tick. The key expression was
// compiled when cs was, so this finds it in the compiler's cache.
func Key(cs *task.CompiledSchedule, tick time.Time) (string, error) {
	s := cs.Schedule()
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
func Due(cs *task.CompiledSchedule, from, now time.Time) []time.Time {
	n := 1
	if m := cs.Schedule().Misfire; m.Policy == task.MisfireCatchUp {
		n = m.Max
	}
	lo := from
	if h := now.Add(-Horizon(cs.Schedule())).Add(-time.Nanosecond); h.After(lo) {
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
