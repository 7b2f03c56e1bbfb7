package task

import (
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/taskq/taskq/pkg/idempotency"
)

// RateLimit caps how many units runs of a task may take in any window of
// Period: a run starts only when every limit of its task admits it, and
// waits (queued, its Waiting saying which limit holds it) until then. A
// limit is shared by every worker and every task that names it; with Key,
// each value of the key has a limit of its own. How it is measured, and
// what it promises, is in docs/rate-limits.md.
type RateLimit struct {
	// Name names the limit, namespace-wide: tasks naming the same limit
	// share its units, and should declare the same Limit and Period.
	Name string
	// Limit is the most units taken in any window of Period.
	Limit int
	// Period is the window's length.
	Period time.Duration
	// Units is what one run takes (default 1, at most Limit).
	Units int
	// Key, when set, is a CEL expression over input and
	// additional_metadata, as an idempotency expression is, whose value
	// picks the limit's own units ("input.customer_id"): each key has
	// Limit units per Period. It is evaluated when a run is triggered
	// (a failure refuses the trigger) and again when it starts.
	Key string
}

// Limits of rate limits.
const (
	// RateLimitMax bounds Limit: a limit keeps one entry per unit taken in
	// its last period, so this bounds the memory of each key's log.
	RateLimitMax = 100_000
	// RateLimitsMax bounds how many rate limits one task declares.
	RateLimitsMax = 8
	// RatePeriodMin and RatePeriodMax bound Period.
	RatePeriodMin = time.Millisecond
	RatePeriodMax = 30 * 24 * time.Hour
)

var rateLimitName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// rateLimits validates opts.RateLimits, fills in their defaults in a copy
// of their own, and compiles their key expressions (nil for a limit
// without one), with opts.Compiler or a compiler with default limits,
// checked against input type in (nil: dynamic).
func rateLimits(task string, opts *Options, in reflect.Type) ([]*idempotency.Expression, error) {
	if len(opts.RateLimits) == 0 {
		return nil, nil
	}
	bad := func(i int, field, format string, args ...any) error {
		return &ConfigError{Task: task, Field: fmt.Sprintf("rate_limits[%d].%s", i, field), Message: fmt.Sprintf(format, args...)}
	}
	if len(opts.RateLimits) > RateLimitsMax {
		return nil, &ConfigError{Task: task, Field: "rate_limits",
			Message: fmt.Sprintf("%d limits, over the most of %d", len(opts.RateLimits), RateLimitsMax)}
	}
	limits := append([]RateLimit(nil), opts.RateLimits...)
	opts.RateLimits = limits
	exprs := make([]*idempotency.Expression, len(limits))
	seen := map[string]int{}
	c := opts.Compiler
	for i := range limits {
		l := &limits[i]
		if l.Units == 0 {
			l.Units = 1
		}
		switch {
		case !rateLimitName.MatchString(l.Name):
			return nil, bad(i, "name", "%q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", l.Name)
		case l.Limit < 1 || l.Limit > RateLimitMax:
			return nil, bad(i, "limit", "%d is outside [1, %d]", l.Limit, RateLimitMax)
		case l.Period < RatePeriodMin || l.Period > RatePeriodMax:
			return nil, bad(i, "period", "%s is outside [%s, %s]", l.Period, RatePeriodMin, RatePeriodMax)
		case l.Period%time.Microsecond != 0:
			return nil, bad(i, "period", "%s is not a whole number of microseconds", l.Period)
		case l.Units < 1 || l.Units > l.Limit:
			return nil, bad(i, "units", "%d is outside [1, limit %d]: a run taking more than the limit would never start", l.Units, l.Limit)
		}
		if j, dup := seen[l.Name]; dup {
			return nil, bad(i, "name", "%q is also rate_limits[%d]: a run would take its units twice", l.Name, j)
		}
		seen[l.Name] = i
		if l.Key == "" {
			continue
		}
		if c == nil {
			var err error
			if c, err = idempotency.NewCompiler(idempotency.Options{}); err != nil {
				return nil, &ConfigError{Task: task, Field: fmt.Sprintf("rate_limits[%d].key", i), Message: err.Error(), Err: err}
			}
		}
		expr, err := c.CompileFor(l.Key, in)
		if err != nil {
			return nil, &ConfigError{Task: task, Field: fmt.Sprintf("rate_limits[%d].key", i), Message: err.Error(), Err: err}
		}
		exprs[i] = expr
	}
	return exprs, nil
}

// RateLimitKeys evaluates the key of each of the task's rate limits on a
// run's JSON input and metadata, as a trigger and a worker do: the i-th
// key is RateLimits[i]'s, "" for a limit without a key. A failed
// expression is a *KeyError of kind KeyRateLimit naming the limit.
func (d *Definition) RateLimitKeys(input, meta []byte) ([]string, error) {
	if len(d.RateLimits) == 0 {
		return nil, nil
	}
	keys := make([]string, len(d.RateLimits))
	for i, e := range d.rateKeys {
		if e == nil {
			continue
		}
		k, err := e.Key(input, meta)
		if err != nil {
			return nil, &KeyError{Task: d.Name, Kind: KeyRateLimit, Expression: d.RateLimits[i].Key, Limit: d.RateLimits[i].Name, Err: err}
		}
		keys[i] = k
	}
	return keys, nil
}

// RateLimitSpec is a RateLimit as plain data, in a Spec.
type RateLimitSpec struct {
	Name     string `json:"name"`
	Limit    int    `json:"limit"`
	PeriodUs int64  `json:"periodUs"`
	Units    int    `json:"units"`
	Key      string `json:"key,omitempty"`
}
