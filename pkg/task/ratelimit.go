package task

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
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
	// Limit is the most units taken in any window of Period (1 to
	// RateLimitMax); 0 with LimitExpression.
	Limit int
	// Period is the window's length.
	Period time.Duration
	// Units is what one run takes (default 1, at most Limit); 0 with
	// UnitsExpression.
	Units int
	// UnitsExpression and LimitExpression, when set, compute Units and
	// Limit for each run: CEL expressions over input and
	// additional_metadata, as Key is, that yield a whole number (an int,
	// a whole double, or a string of digits). They are compiled with the
	// task, evaluated when a run is triggered (a failure, or units
	// outside [1, limit] or a limit outside [1, RateLimitMax], refuses
	// the trigger with a *KeyError) and again when it starts. Each run is
	// measured by its own limit: see docs/rate-limits.md.
	UnitsExpression string
	LimitExpression string
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

// rateExprs are a rate limit's compiled expressions, each nil when the
// limit has none.
type rateExprs struct {
	key, units, limit *idempotency.Expression
}

// rateLimits validates opts.RateLimits, fills in their defaults in a copy
// of their own, and compiles their expressions, with opts.Compiler or a
// compiler with default limits, checked against input type in (nil:
// dynamic).
func rateLimits(task string, opts *Options, in reflect.Type) ([]rateExprs, error) {
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
	exprs := make([]rateExprs, len(limits))
	seen := map[string]int{}
	c := opts.Compiler
	compile := func(i int, field, expr string, number bool) (*idempotency.Expression, error) {
		if expr == "" {
			return nil, nil
		}
		if c == nil {
			var err error
			if c, err = idempotency.NewCompiler(idempotency.Options{}); err != nil {
				return nil, &ConfigError{Task: task, Field: fmt.Sprintf("rate_limits[%d].%s", i, field), Message: err.Error(), Err: err}
			}
		}
		e, err := compileRateExpr(c, expr, in, number)
		if err != nil {
			return nil, &ConfigError{Task: task, Field: fmt.Sprintf("rate_limits[%d].%s", i, field), Message: err.Error(), Err: err}
		}
		return e, nil
	}
	for i := range limits {
		l := &limits[i]
		if l.Units == 0 && l.UnitsExpression == "" {
			l.Units = 1
		}
		// The most a static Units may be: the static limit, or any limit.
		most := l.Limit
		if l.LimitExpression != "" {
			most = RateLimitMax
		}
		switch {
		case !rateLimitName.MatchString(l.Name):
			return nil, bad(i, "name", "%q must be 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit", l.Name)
		case l.LimitExpression != "" && l.Limit != 0:
			return nil, bad(i, "limit", "%d is set with limit_expression %q: set one of them", l.Limit, l.LimitExpression)
		case l.LimitExpression == "" && (l.Limit < 1 || l.Limit > RateLimitMax):
			return nil, bad(i, "limit", "%d is outside [1, %d]", l.Limit, RateLimitMax)
		case l.Period < RatePeriodMin || l.Period > RatePeriodMax:
			return nil, bad(i, "period", "%s is outside [%s, %s]", l.Period, RatePeriodMin, RatePeriodMax)
		case l.Period%time.Microsecond != 0:
			return nil, bad(i, "period", "%s is not a whole number of microseconds", l.Period)
		case l.UnitsExpression != "" && l.Units != 0:
			return nil, bad(i, "units", "%d is set with units_expression %q: set one of them", l.Units, l.UnitsExpression)
		case l.UnitsExpression == "" && (l.Units < 1 || l.Units > most):
			return nil, bad(i, "units", "%d is outside [1, limit %d]: a run taking more than the limit would never start", l.Units, most)
		}
		if j, dup := seen[l.Name]; dup {
			return nil, bad(i, "name", "%q is also rate_limits[%d]: a run would take its units twice", l.Name, j)
		}
		seen[l.Name] = i
		var err error
		if exprs[i].key, err = compile(i, "key", l.Key, false); err != nil {
			return nil, err
		}
		if exprs[i].units, err = compile(i, "units_expression", l.UnitsExpression, true); err != nil {
			return nil, err
		}
		if exprs[i].limit, err = compile(i, "limit_expression", l.LimitExpression, true); err != nil {
			return nil, err
		}
	}
	return exprs, nil
}

// compileRateExpr compiles a rate limit's expression against input type in
// (nil: dynamic). A number's expression is checked as written, then
// compiled as string(expr), whose decimal value rateNumber parses: the
// expression may yield an int, a double or a string.
func compileRateExpr(c *idempotency.Compiler, expr string, in reflect.Type, number bool) (*idempotency.Expression, error) {
	e, err := c.CompileFor(expr, in)
	if err != nil || !number {
		return e, err
	}
	e, err = c.CompileFor("string("+expr+"\n)", in)
	if err != nil {
		return nil, fmt.Errorf("%q does not yield a number: %w", expr, asWritten(err, expr))
	}
	return e, nil
}

// asWritten makes an *idempotency.Error of a number's wrapped expression
// name the expression as written.
func asWritten(err error, expr string) error {
	var ie *idempotency.Error
	if errors.As(err, &ie) {
		c := *ie
		c.Expr = expr
		return &c
	}
	return err
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
	for i, e := range d.rate {
		if e.key == nil {
			continue
		}
		k, err := e.key.Key(input, meta)
		if err != nil {
			return nil, &KeyError{Task: d.Name, Kind: KeyRateLimit, Expression: d.RateLimits[i].Key, Limit: d.RateLimits[i].Name, Err: err}
		}
		keys[i] = k
	}
	return keys, nil
}

// RateLimitUnits computes the units a run takes of each of the task's
// rate limits, and each limit, on its JSON input and metadata, as a
// trigger and a worker do: RateLimits[i]'s Units and Limit, or the values
// of its UnitsExpression and LimitExpression. An expression that fails,
// or yields no whole number, or a limit outside [1, RateLimitMax], or
// units outside [1, limit], is a *KeyError of kind KeyRateLimitUnits or
// KeyRateLimitLimit naming the limit and the expression; a value out of
// range matches ErrRateLimitValue.
func (d *Definition) RateLimitUnits(input, meta []byte) (units, limits []int, err error) {
	if len(d.RateLimits) == 0 {
		return nil, nil, nil
	}
	units, limits = make([]int, len(d.RateLimits)), make([]int, len(d.RateLimits))
	for i, e := range d.rate {
		l := d.RateLimits[i]
		limits[i], units[i] = l.Limit, l.Units
		if e.limit != nil {
			if limits[i], err = d.rateNumber(l, KeyRateLimitLimit, l.LimitExpression, e.limit, RateLimitMax, input, meta); err != nil {
				return nil, nil, err
			}
			if units[i] > limits[i] {
				return nil, nil, &KeyError{Task: d.Name, Kind: KeyRateLimitLimit, Expression: l.LimitExpression, Limit: l.Name,
					Err: fmt.Errorf("%w: limit %d is below the %d units a run takes", ErrRateLimitValue, limits[i], units[i])}
			}
		}
		if e.units != nil {
			if units[i], err = d.rateNumber(l, KeyRateLimitUnits, l.UnitsExpression, e.units, limits[i], input, meta); err != nil {
				return nil, nil, err
			}
		}
	}
	return units, limits, nil
}

// rateNumber evaluates one of l's number expressions and checks that its
// value is in [1, most].
func (d *Definition) rateNumber(l RateLimit, kind, src string, e *idempotency.Expression, most int, input, meta []byte) (int, error) {
	keyErr := func(err error) error {
		return &KeyError{Task: d.Name, Kind: kind, Expression: src, Limit: l.Name, Err: err}
	}
	v, err := e.Key(input, meta)
	if err != nil {
		return 0, keyErr(asWritten(err, src))
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || n != math.Trunc(n) {
		return 0, keyErr(fmt.Errorf("%w: %q is not a whole number", ErrRateLimitValue, v))
	}
	if n < 1 || n > float64(most) {
		bound := strconv.Itoa(most)
		if kind == KeyRateLimitUnits {
			bound = "limit " + bound
		}
		return 0, keyErr(fmt.Errorf("%w: %s is outside [1, %s]", ErrRateLimitValue, v, bound))
	}
	return int(n), nil
}

// RateLimitSpec is a RateLimit as plain data, in a Spec.
type RateLimitSpec struct {
	Name     string `json:"name"`
	Limit    int    `json:"limit"`
	PeriodUs int64  `json:"periodUs"`
	Units    int    `json:"units"`
	Key      string `json:"key,omitempty"`
	// UnitsExpression and LimitExpression are RateLimit's.
	UnitsExpression string `json:"unitsExpression,omitempty"`
	LimitExpression string `json:"limitExpression,omitempty"`
}
