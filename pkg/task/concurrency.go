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
	// *worker.CancelledError.
	CancelInProgress ConcurrencyStrategy = "cancel_in_progress"
	// CancelNewest cancels the new run at once; the running ones go on.
	CancelNewest ConcurrencyStrategy = "cancel_newest"
)

// ConcurrencyMaxRunsMax bounds Concurrency.MaxRuns.
const ConcurrencyMaxRunsMax = 10000

// Concurrency limits how many runs of one group run at once, across every
// worker of the namespace.
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

// compileConcurrency validates c and compiles its expression with compiler
// comp (nil: one with default limits), checked against input type in (nil:
// dynamic).
func compileConcurrency(c *Concurrency, comp *idempotency.Compiler, in reflect.Type, cfg func(field, msg string, err error) error) (*Concurrency, *idempotency.Expression, error) {
	cc := *c
	if cc.Strategy == "" {
		cc.Strategy = GroupRoundRobin
	}
	if !cc.Strategy.valid() {
		return nil, nil, cfg("concurrency.strategy", fmt.Sprintf("%q is not %q, %q or %q", cc.Strategy, GroupRoundRobin, CancelInProgress, CancelNewest), nil)
	}
	if cc.MaxRuns < 1 || cc.MaxRuns > ConcurrencyMaxRunsMax {
		return nil, nil, cfg("concurrency.max_runs", fmt.Sprintf("%d is outside [1, %d]", cc.MaxRuns, ConcurrencyMaxRunsMax), nil)
	}
	if comp == nil {
		var err error
		if comp, err = idempotency.NewCompiler(idempotency.Options{}); err != nil {
			return nil, nil, cfg("concurrency.expression", err.Error(), err)
		}
	}
	expr, err := comp.CompileFor(cc.Expression, in)
	if err != nil {
		return nil, nil, cfg("concurrency.expression", err.Error(), err)
	}
	return &cc, expr, nil
}

// ConcurrencyGroup derives a run's concurrency group from its JSON input
// and metadata, as a trigger and a worker do: to preview the group a run
// gets. It returns "" when the task has no Concurrency. A failure is a
// *KeyError of kind KeyConcurrency.
func (d *Definition) ConcurrencyGroup(input, meta []byte) (string, error) {
	if d.concExpr == nil {
		return "", nil
	}
	group, err := d.concExpr.Key(input, meta)
	if err != nil {
		return "", &KeyError{Task: d.Name, Kind: KeyConcurrency, Expression: d.Concurrency.Expression, Err: err}
	}
	return group, nil
}
