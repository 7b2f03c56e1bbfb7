package task

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig matches every *ConfigError of a task, or of a
// client's or a trigger's own options (durability, priority, schedule).
var ErrInvalidConfig = errors.New("invalid task configuration")

// ErrInvalidSchedule matches every *ConfigError of a schedule.
var ErrInvalidSchedule = errors.New("invalid schedule")

// ConfigError says what is wrong with a task's options or a schedule: it
// names the task (or the schedule), the field and what is wrong with it.
// It is returned when the task is defined (New, NewDefinition) or the
// schedule checked (Schedule.Validate, client.Schedules), and at a
// trigger only for the trigger's own options: its durability, priority or
// schedule (client.WithDurability, client.WithPriority; client.RunAt and
// RunIn, whose Field is "runAt" or "runIn", the HTTP API's names, as is
// Inspector.Reschedule's). Nothing was created then.
type ConfigError struct {
	// Task is the task's name; "" for a schedule, or a setting of no task
	// (or a trigger's, but for a schedule the task cannot take).
	Task string
	// Schedule is the schedule's name, for a schedule's error.
	Schedule string
	// Field is the option at fault, e.g. "retries",
	// "rate_limits[1].period", "concurrency.expression"; for a schedule
	// one of name, task, cron, timezone, input, additional_metadata,
	// key_expression or misfire.
	Field   string
	Message string
	// Err is the underlying error: the *idempotency.Error of an
	// expression that does not compile, the cron parser's.
	Err error

	schedule bool // a schedule's: matches ErrInvalidSchedule
}

// Error names the task (or schedule), the field and what is wrong with it.
func (e *ConfigError) Error() string {
	switch {
	case e.schedule:
		return fmt.Sprintf("schedule %q: %s: %s", e.Schedule, e.Field, e.Message)
	case e.Task == "":
		return fmt.Sprintf("%s: %s", e.Field, e.Message)
	}
	return fmt.Sprintf("task %q: %s: %s", e.Task, e.Field, e.Message)
}

// Unwrap returns ErrInvalidSchedule for a schedule's error and
// ErrInvalidConfig for any other (so that errors.Is matches them), and the
// underlying error.
func (e *ConfigError) Unwrap() []error {
	kind := ErrInvalidConfig
	if e.schedule {
		kind = ErrInvalidSchedule
	}
	if e.Err == nil {
		return []error{kind}
	}
	return []error{kind, e.Err}
}

// The kinds of *KeyError: which of a task's expressions failed.
const (
	KeyIdempotency = "idempotency" // Idempotency.Expression
	KeyConcurrency = "concurrency" // Concurrency.Expression
	KeyRateLimit   = "rate_limit"  // a RateLimit's Key
	// KeyRateLimitUnits and KeyRateLimitLimit: a RateLimit's
	// UnitsExpression or LimitExpression failed, or its value is out of
	// range (ErrRateLimitValue).
	KeyRateLimitUnits = "rate_limit_units"
	KeyRateLimitLimit = "rate_limit_limit"
)

// ErrRateLimitValue matches the error a *KeyError of kind
// KeyRateLimitUnits or KeyRateLimitLimit wraps when the expression
// yielded a value that is no whole number or is out of range: units
// outside [1, limit], a limit outside [1, RateLimitMax].
var ErrRateLimitValue = errors.New("value out of range")

// KeyError says one of a task's expressions failed on a run's input: the
// idempotency expression (Definition.Key), a concurrency expression
// (Concurrency.Expression), a rate limit's key (RateLimit.Key) or its
// units or limit (RateLimit.UnitsExpression, LimitExpression), each of
// which a trigger evaluates. At a trigger it refuses the trigger and
// nothing is created; every trigger path
// returns it: client.RunNoWait, Run and RunMany, the HTTP API (a 422
// idempotency_key_error naming the expression) and events (recorded on
// the event as the task's error). It names the task and the expression,
// and wraps the *idempotency.Error that says what went wrong, which
// errors.As and errors.Is reach through it.
type KeyError struct {
	Task string
	// Kind is KeyIdempotency, KeyConcurrency, KeyRateLimit,
	// KeyRateLimitUnits or KeyRateLimitLimit.
	Kind       string
	Expression string
	// Limit names the rate limit, for the KeyRateLimit kinds.
	Limit string
	Err   error
}

// Error names the task, the expression and what went wrong with it.
func (e *KeyError) Error() string {
	switch e.Kind {
	case KeyConcurrency:
		return fmt.Sprintf("concurrency group %q: %v", e.Expression, e.Err)
	case KeyRateLimit:
		return fmt.Sprintf("rate limit %q key: %v", e.Limit, e.Err)
	case KeyRateLimitUnits:
		return fmt.Sprintf("rate limit %q units %q: %v", e.Limit, e.Expression, e.Err)
	case KeyRateLimitLimit:
		return fmt.Sprintf("rate limit %q limit %q: %v", e.Limit, e.Expression, e.Err)
	}
	return "idempotency key: " + e.Err.Error()
}

// Unwrap returns the expression's error.
func (e *KeyError) Unwrap() error { return e.Err }
