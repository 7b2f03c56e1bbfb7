package admission

import (
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// The fields of a scheduled trigger, as the HTTP API and errors name them.
const (
	FieldRunAt = "runAt"
	FieldRunIn = "runIn"
)

// MaxScheduleAheadDefault is how far ahead a trigger may schedule its run
// when Config.MaxScheduleAhead is 0.
const MaxScheduleAheadDefault = 366 * 24 * time.Hour

// Schedule asks for the run to be queued later: at a time (At) or after a
// delay from the trigger (In), one of the two. A time at or before the
// trigger's is now: the run is queued at once.
type Schedule struct {
	At *time.Time
	In *time.Duration
}

// scheduleError says a trigger's schedule cannot be accepted: a
// *task.ConfigError whose Field is FieldRunAt or FieldRunIn (see
// ScheduleField), as a trigger's other options' errors are.
func scheduleError(taskName, field, format string, args ...any) error {
	return &task.ConfigError{Task: taskName, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ScheduleField returns the *task.ConfigError of a schedule that cannot
// be accepted (its Field FieldRunAt or FieldRunIn) found in err's chain.
func ScheduleField(err error) (*task.ConfigError, bool) {
	var ce *task.ConfigError
	if errors.As(err, &ce) && (ce.Field == FieldRunAt || ce.Field == FieldRunIn) {
		return ce, true
	}
	return nil, false
}

// delay checks a trigger's schedule and returns how long after now its run
// is due (0: at once).
func (c Config) delay(def *task.Definition, s *Schedule, now time.Time) (time.Duration, error) {
	field, d, err := c.ScheduleDelay(s, now)
	if err != nil || d == 0 {
		return 0, err
	}
	if idem := def.Idempotency; idem != nil && idem.Strategy == task.StrategyDebounce {
		return 0, scheduleError(def.Name, field,
			"cannot be set: the task's debounce strategy queues each run when its window has passed, so its runs cannot be scheduled")
	}
	return d, nil
}

// ScheduleDelay checks a schedule against the limits and returns how long
// after now it is due (0: at once, for no schedule or a time already
// passed) and the field it was given in, or a *task.ConfigError naming
// that field.
func (c Config) ScheduleDelay(s *Schedule, now time.Time) (field string, d time.Duration, err error) {
	if s == nil || (s.At == nil && s.In == nil) {
		return "", 0, nil
	}
	limit := c.MaxScheduleAhead
	if limit <= 0 {
		limit = MaxScheduleAheadDefault
	}
	switch {
	case s.At != nil && s.In != nil:
		return FieldRunAt, 0, scheduleError("", FieldRunAt, "given together with %s: give one of them", FieldRunIn)
	case s.At != nil:
		if s.At.IsZero() {
			return FieldRunAt, 0, scheduleError("", FieldRunAt, "must not be the zero time")
		}
		field, d = FieldRunAt, s.At.Sub(now)
		if d > limit {
			return FieldRunAt, 0, scheduleError("", FieldRunAt, "%s is %s ahead, over the limit of %s",
				s.At.UTC().Format(time.RFC3339), d.Round(time.Second), limit)
		}
	default:
		field, d = FieldRunIn, *s.In
		if d < 0 {
			return FieldRunIn, 0, scheduleError("", FieldRunIn, "%s must not be negative", d)
		}
		if d > limit {
			return FieldRunIn, 0, scheduleError("", FieldRunIn, "%s is over the limit of %s", d, limit)
		}
	}
	if d < time.Millisecond {
		return field, 0, nil // due: queued at once
	}
	return field, d, nil
}

// schedule makes p wait d before it is queued. Its key is claimed at once
// and held for the strategy's ttl (or fallback ttl) from the due time, not
// from the trigger: a duplicate meets the scheduled run while it waits and
// as long after it falls due as it would meet one triggered then.
func schedule(p *engine.EnqueueParams, d time.Duration) {
	if d <= 0 {
		return
	}
	p.Delay = d
	if p.Strategy == engine.StrategyTTL || p.Strategy == engine.StrategyStatus {
		p.Hold += d
	}
}
