package task

import (
	"fmt"
	"reflect"

	"github.com/taskq/taskq/pkg/idempotency"
)

// ConcurrencyStrategy says what a run does when its concurrency group
// already has MaxRuns runs running.
type ConcurrencyStrategy string

const (
	// GroupRoundRobin makes the run wait, queued, until a run of its group
	// ends; each group has its own slots, so a busy group never holds back
	// another group's runs (the default).
	GroupRoundRobin ConcurrencyStrategy = "group_round_robin"
	// CancelInProgress starts the run at once and cancels the oldest
	// running run of its group, whose handler's context ends with a
	// *client.RunError naming the group and the new run.
	CancelInProgress ConcurrencyStrategy = "cancel_in_progress"
	// CancelNewest cancels the new run at once; the running ones go on.
	CancelNewest ConcurrencyStrategy = "cancel_newest"
)

// ConcurrencyMaxRunsMax bounds Concurrency.MaxRuns.
const ConcurrencyMaxRunsMax = 10000

// ConcurrencyLimitsMax bounds how many concurrency limits one task
// declares (Options.Concurrency): each costs a round trip to Redis when a
// run starts.
const ConcurrencyLimitsMax = 4

// Concurrency limits how many runs of one group run at once, across every
// worker of the namespace. A task may declare several (Options.Concurrency),
// each with its own expression, MaxRuns and Strategy: a run then belongs
// to one group of each and starts only when every one of them admits it
// (see docs/concurrency.md for how their strategies combine).
type Concurrency struct {
	// Expression is a CEL expression over input and additional_metadata
	// that yields the run's group, e.g. `input.tenant`; it is compiled,
	// bounded and checked as idempotency expressions are (a non-empty
	// string).
	Expression string `json:"expression"`
	// MaxRuns is how many runs of a group may run at once (at least 1).
	MaxRuns int `json:"maxRuns"`
	// Strategy says what a run does when its group is full (default
	// GroupRoundRobin).
	Strategy ConcurrencyStrategy `json:"strategy"`
}

// valid reports whether s is a known strategy ("" counts as
// GroupRoundRobin).
func (s ConcurrencyStrategy) valid() bool {
	switch s {
	case "", GroupRoundRobin, CancelInProgress, CancelNewest:
		return true
	}
	return false
}

// ErrConcurrencyCancelled says a run was cancelled by its concurrency
// group: a newer run of the group took its slot (CancelInProgress) or the
// group was full when it came (CancelNewest). It matches
// ErrRunCancelled's runs too: errors.Is(err, ErrRunCancelled) holds for
// every error that matches it.
var ErrConcurrencyCancelled = fmt.Errorf("%w by its concurrency group", ErrRunCancelled)

// compileConcurrency validates the task's concurrency limits, fills in
// their defaults in a copy of their own, and compiles their expressions
// with compiler comp (nil: one with default limits), checked against input
// type in (nil: dynamic).
func compileConcurrency(opts *Options, in reflect.Type, cfg func(field, msg string, err error) error) ([]*idempotency.Expression, error) {
	if len(opts.Concurrency) == 0 {
		opts.Concurrency = nil
		return nil, nil
	}
	if len(opts.Concurrency) > ConcurrencyLimitsMax {
		return nil, cfg("concurrency", fmt.Sprintf("%d limits, over the most of %d", len(opts.Concurrency), ConcurrencyLimitsMax), nil)
	}
	cs := append([]Concurrency(nil), opts.Concurrency...)
	opts.Concurrency = cs
	exprs := make([]*idempotency.Expression, len(cs))
	comp := opts.Compiler
	for i := range cs {
		c := &cs[i]
		field := func(f string) string { return fmt.Sprintf("concurrency[%d].%s", i, f) }
		if c.Strategy == "" {
			c.Strategy = GroupRoundRobin
		}
		if !c.Strategy.valid() {
			return nil, cfg(field("strategy"), fmt.Sprintf("%q is not %q, %q or %q", c.Strategy, GroupRoundRobin, CancelInProgress, CancelNewest), nil)
		}
		if c.MaxRuns < 1 || c.MaxRuns > ConcurrencyMaxRunsMax {
			return nil, cfg(field("max_runs"), fmt.Sprintf("%d is outside [1, %d]", c.MaxRuns, ConcurrencyMaxRunsMax), nil)
		}
		if comp == nil {
			var err error
			if comp, err = idempotency.NewCompiler(idempotency.Options{}); err != nil {
				return nil, cfg(field("expression"), err.Error(), err)
			}
		}
		expr, err := comp.CompileFor(c.Expression, in)
		if err != nil {
			return nil, cfg(field("expression"), err.Error(), err)
		}
		exprs[i] = expr
	}
	return exprs, nil
}

// ConcurrencyGroups derives a run's concurrency groups from its JSON input
// and metadata, as a trigger and a worker do: to preview the groups a run
// gets. The i-th group is Concurrency[i]'s; nil when the task has no
// Concurrency. A failure is a *KeyError of kind KeyConcurrency naming the
// expression that failed.
func (d *Definition) ConcurrencyGroups(input, meta []byte) ([]string, error) {
	if len(d.concExprs) == 0 {
		return nil, nil
	}
	groups := make([]string, len(d.concExprs))
	for i, e := range d.concExprs {
		group, err := e.Key(input, meta)
		if err != nil {
			return nil, &KeyError{Task: d.Name, Kind: KeyConcurrency, Expression: d.Concurrency[i].Expression, Err: err}
		}
		groups[i] = group
	}
	return groups, nil
}
