// Package task defines tasks once, typed, for both sides of the queue: the
// client that triggers runs and the worker that handles them use the same
// *Task, so they can never disagree about the idempotency expression, the
// strategy, retries or the timeout.
package task

import (
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/taskq/taskq/internal/durability"
	"github.com/taskq/taskq/pkg/idempotency"
)

// Strategy says how long an idempotency key stays claimed.
type Strategy string

const (
	// StrategyTTL holds the key for TTL from the accepted trigger,
	// whatever the run does. Duplicates do not extend the window.
	StrategyTTL Strategy = "ttl"
	// StrategyStatus holds the key while the run is active (through its
	// retries) and releases it the moment the run ends, or Retain later.
	// FallbackTTL caps the hold of a run that never ends.
	StrategyStatus Strategy = "status"
	// StrategyDebounce is a TTL window that every duplicate restarts: the
	// run waits until the window passes without a new trigger, then runs
	// once with the newest input. A duplicate that arrives after the run
	// started is rejected until the window passes.
	StrategyDebounce Strategy = "debounce"
)

// ConflictPolicy says what a trigger does when another run holds its key.
type ConflictPolicy string

const (
	// ConflictReject fails the trigger with a collision error that carries
	// a handle to the owner (the default).
	ConflictReject ConflictPolicy = "reject"
	// ConflictAttach returns the owner's handle instead of an error: the
	// caller waits on the owner's result as if it were its own.
	ConflictAttach ConflictPolicy = "attach"
	// ConflictSupersede takes the key over atomically and cancels the
	// owner, whose handler sees a cause naming the new run.
	ConflictSupersede ConflictPolicy = "supersede"
	// ConflictSignal sends the trigger's input to the active owner as a
	// signal instead of starting a run (an ended owner still rejects).
	ConflictSignal ConflictPolicy = "signal"
)

// valid reports whether p is a known policy ("" counts as reject).
func (p ConflictPolicy) valid() bool {
	switch p {
	case "", ConflictReject, ConflictAttach, ConflictSupersede, ConflictSignal:
		return true
	}
	return false
}

// Limits on durations, so a typo cannot hold a key for years.
const (
	DurationMin      = time.Millisecond
	DurationMax      = 30 * 24 * time.Hour
	RetainMax        = 30 * 24 * time.Hour
	RetriesMax       = 100
	MaxDeliveriesMax = 1000
	// RedeliveriesDefault is how many times a run may be redelivered after
	// its worker died, on top of its retries, before it is failed.
	RedeliveriesDefault = 10
)

// Idempotency configures how duplicate triggers are recognised.
type Idempotency struct {
	// Expression is a CEL expression over input and additional_metadata
	// that yields the key, e.g. `"order:" + input.id`.
	Expression string
	Strategy   Strategy
	// TTL is the window of StrategyTTL.
	TTL time.Duration
	// FallbackTTL caps the hold of StrategyStatus if a run never ends.
	FallbackTTL time.Duration
	// Retain keeps a StrategyStatus key claimed this long after the run
	// ends, so late duplicates still collide. 0 releases at once.
	Retain time.Duration
}

// TTL returns a TTL-strategy configuration.
func TTL(expression string, ttl time.Duration) *Idempotency {
	return &Idempotency{Expression: expression, Strategy: StrategyTTL, TTL: ttl}
}

// Debounce returns a debounce configuration with the given quiet window.
func Debounce(expression string, window time.Duration) *Idempotency {
	return &Idempotency{Expression: expression, Strategy: StrategyDebounce, TTL: window}
}

// Status returns a status-strategy configuration.
func Status(expression string, fallbackTTL time.Duration) *Idempotency {
	return &Idempotency{Expression: expression, Strategy: StrategyStatus, FallbackTTL: fallbackTTL}
}

// WithRetain returns a copy of a status-strategy configuration that keeps
// the key for d after the run ends.
func (i Idempotency) WithRetain(d time.Duration) *Idempotency {
	i.Retain = d
	return &i
}

// Backoff spaces out retries: the retry after the n-th failure waits
// Initial * Factor^(n-1), capped at Max, with up to Jitter (a fraction of
// that) added at random.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	Factor  float64
	Jitter  float64
}

// BackoffDefault is used when Options.Backoff is zero.
var BackoffDefault = Backoff{Initial: time.Second, Max: 5 * time.Minute, Factor: 2, Jitter: 0.2}

// Options configure a task. Zero values mean the documented defaults.
type Options struct {
	// Idempotency enables deduplication; nil means every trigger runs.
	Idempotency *Idempotency
	// Retries is how many times a failed attempt is retried (default 0).
	Retries int
	// Backoff spaces retries (default BackoffDefault).
	Backoff Backoff
	// Timeout bounds one attempt; its context is cancelled then (default none).
	Timeout time.Duration
	// OnEvents lists the event keys that trigger this task.
	OnEvents []string
	// MaxDeliveries bounds how often a run is handed to a worker in all,
	// counting redeliveries after a worker died (default Retries+1+RedeliveriesDefault).
	MaxDeliveries int
	// OnConflict is the default conflict policy of triggers (default reject).
	OnConflict ConflictPolicy
	// Durability, when set, is the acknowledgement every trigger of the
	// task waits for, in place of the client's (a trigger's own
	// client.WithDurability still wins). Set it to &Durability{} to turn
	// the client's off for this task. Nil: the client's applies.
	Durability *Durability
	// Compiler compiles the expression; nil uses a compiler with default limits.
	Compiler *idempotency.Compiler

	// RateLimits cap how many runs of the task start per period: a run
	// starts only once every one of them admits it, and waits queued
	// until then (see RateLimit).
	RateLimits []RateLimit

	// Concurrency limits how many runs of a group (an expression's value)
	// run at once, across every worker: one limit, or several (up to
	// ConcurrencyLimitsMax), each with its own expression, MaxRuns and
	// Strategy, all of which must admit a run before it starts.
	Concurrency []Concurrency

	// Priority is the default priority of the task's runs, 1 (the
	// lowest, the default; 0 means it) to 3 (the highest); a trigger may
	// give its own (client.WithPriority). A worker starts a task's queued
	// runs of a higher priority first, and a lower priority's run waits
	// behind a bounded number of them (see docs/scheduling.md).
	Priority int

	// Workflow, when set, makes the task a workflow: a DAG of tasks that
	// worker.HandleWorkflow runs for each of its runs.
	Workflow *Workflow
}

var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// Definition is the untyped part of a task, shared by everything that
// triggers or runs it.
type Definition struct {
	Name string
	Options
	expr *idempotency.Expression
	// rate are the compiled expressions of RateLimits.
	rate []rateExprs

	// concExprs are the compiled Concurrency expressions, in order.
	concExprs []*idempotency.Expression
}

// NewDefinition validates opts and compiles the expression. Its input is
// dynamic: expressions are checked against input's type by New only.
func NewDefinition(name string, opts Options) (*Definition, error) {
	return newDefinition(name, opts, nil)
}

// newDefinition is NewDefinition for input of Go type in, against whose
// JSON shape every expression is checked (nil: dynamic).
func newDefinition(name string, opts Options, in reflect.Type) (*Definition, error) {
	cfg := func(field, msg string, err error) error {
		return &ConfigError{Task: name, Field: field, Message: msg, Err: err}
	}
	if !namePattern.MatchString(name) {
		return nil, cfg("name", "must be 1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", nil)
	}
	if opts.Retries < 0 || opts.Retries > RetriesMax {
		return nil, cfg("retries", fmt.Sprintf("%d is outside [0, %d]", opts.Retries, RetriesMax), nil)
	}
	if opts.Timeout < 0 || opts.Timeout > DurationMax {
		return nil, cfg("timeout", fmt.Sprintf("%s is outside [0, %s]", opts.Timeout, DurationMax), nil)
	}
	if opts.Backoff == (Backoff{}) {
		opts.Backoff = BackoffDefault
	}
	if opts.Backoff.Initial <= 0 || opts.Backoff.Factor < 1 || opts.Backoff.Jitter < 0 {
		return nil, cfg("backoff", "needs Initial > 0, Factor >= 1 and Jitter >= 0", nil)
	}
	if opts.MaxDeliveries == 0 {
		opts.MaxDeliveries = opts.Retries + 1 + RedeliveriesDefault
	}
	if opts.MaxDeliveries < opts.Retries+1 || opts.MaxDeliveries > MaxDeliveriesMax {
		return nil, cfg("max_deliveries", fmt.Sprintf("%d is outside [retries+1, %d]", opts.MaxDeliveries, MaxDeliveriesMax), nil)
	}
	if err := checkPriority(name, opts.Priority); err != nil {
		return nil, err
	}
	if !opts.OnConflict.valid() {
		return nil, cfg("on_conflict", fmt.Sprintf("%q is not reject, attach, supersede or signal", opts.OnConflict), nil)
	}
	if opts.Durability != nil {
		if p := durability.Problem(opts.Durability.Replicas, opts.Durability.Timeout); p != "" {
			return nil, cfg("durability", p, nil)
		}
		dur := *opts.Durability
		opts.Durability = &dur
	}
	// Rate limits: see ratelimit.go.
	rate, err := rateLimits(name, &opts, in)
	if err != nil {
		return nil, err
	}
	concExprs, err := compileConcurrency(&opts, in, cfg)
	if err != nil {
		return nil, err
	}
	if opts.Workflow != nil {
		if opts.Workflow, err = checkWorkflow(name, opts.Workflow); err != nil {
			return nil, err
		}
	}
	d := &Definition{Name: name, Options: opts, rate: rate, concExprs: concExprs}
	if opts.Idempotency == nil {
		return d, nil
	}
	idem := *opts.Idempotency
	d.Idempotency = &idem
	inRange := func(field string, v time.Duration) error {
		if v < DurationMin || v > DurationMax {
			return cfg(field, fmt.Sprintf("%s is outside [%s, %s]", v, DurationMin, DurationMax), nil)
		}
		return nil
	}
	switch idem.Strategy {
	case StrategyTTL, StrategyDebounce:
		if err := inRange("ttl", idem.TTL); err != nil {
			return nil, err
		}
		if idem.Retain != 0 {
			return nil, cfg("retain", "applies to the status strategy only", nil)
		}
	case StrategyStatus:
		if err := inRange("fallback_ttl", idem.FallbackTTL); err != nil {
			return nil, err
		}
		if idem.Retain < 0 || idem.Retain > RetainMax {
			return nil, cfg("retain", fmt.Sprintf("%s is outside [0, %s]", idem.Retain, RetainMax), nil)
		}
	default:
		return nil, cfg("strategy", fmt.Sprintf("%q is not %q, %q or %q", idem.Strategy, StrategyTTL, StrategyStatus, StrategyDebounce), nil)
	}
	c := opts.Compiler
	if c == nil {
		var err error
		if c, err = idempotency.NewCompiler(idempotency.Options{}); err != nil {
			return nil, cfg("expression", err.Error(), err)
		}
	}
	expr, err := c.CompileFor(idem.Expression, in)
	if err != nil {
		return nil, cfg("expression", err.Error(), err)
	}
	d.expr = expr
	return d, nil
}

// Key derives the idempotency key of a trigger from its JSON input and
// metadata. It returns "" when the task is not deduplicated. A failure is
// a *KeyError of kind KeyIdempotency.
func (d *Definition) Key(input, meta []byte) (string, error) {
	if d.expr == nil {
		return "", nil
	}
	key, err := d.expr.Key(input, meta)
	if err != nil {
		return "", &KeyError{Task: d.Name, Kind: KeyIdempotency, Expression: d.Idempotency.Expression, Err: err}
	}
	return key, nil
}

// Task is a typed task: I is its input, O its result; both travel as JSON.
type Task[I, O any] struct {
	def *Definition
}

// New defines a typed task. A bad expression or option fails here, once,
// with a *ConfigError. Every expression (idempotency, concurrency, rate
// limit keys) is checked against the JSON shape of I (see
// idempotency.Compiler.CompileFor): a field I does not have is an error
// here, not at each trigger.
func New[I, O any](name string, opts Options) (*Task[I, O], error) {
	d, err := newDefinition(name, opts, reflect.TypeFor[I]())
	if err != nil {
		return nil, err
	}
	return &Task[I, O]{def: d}, nil
}

// Must is New that panics on error, for package-level task definitions.
func Must[I, O any](name string, opts Options) *Task[I, O] {
	t, err := New[I, O](name, opts)
	if err != nil {
		panic(err)
	}
	return t
}

// Name is the task's name.
func (t *Task[I, O]) Name() string { return t.def.Name }

// Definition returns the untyped definition.
func (t *Task[I, O]) Definition() *Definition { return t.def }

// checkPriority returns a *ConfigError naming the priority p of task when
// it is not 0 (the default) or 1 to 3.
func checkPriority(task string, p int) error {
	if p < 0 || p > 3 {
		return &ConfigError{Task: task, Field: "priority", Message: fmt.Sprintf("%d is not 1, 2 or 3", p)}
	}
	return nil
}
