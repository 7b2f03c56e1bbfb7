package idempotency

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"
)

// Expression is a compiled key expression. It is immutable and safe for
// concurrent use.
type Expression struct {
	schedule     bool // compiled by a schedule compiler: schedule is declared
	src          string
	prg          cel.Program // tracks cost and stops at the limit
	maxKeyLength int
	costLimit    uint64
	maxDepth     int

	// bound and untracked are set when the expression's cost is bounded by
	// the size of its input; see costBound.
	bound     *costBound
	untracked cel.Program

	// fast is set when the whole expression is a select chain, which is then
	// evaluated without CEL.
	fast *chain
	// chains maps the AST node IDs of select chains to their paths, so an
	// evaluation error labelled with a node ID can name the field it failed on.
	chains map[int64]*chain
}

// emptyObject stands in for absent input or metadata. CEL never mutates its
// inputs, so one shared map is safe.
var emptyObject = map[string]any{}

// keyMap is Key for input and additional_metadata decoded by
// encoding/json (nil means an empty object).
func (e *Expression) keyMap(input map[string]any, meta map[string]any) (string, error) {
	if e.fast != nil {
		if key, handled, err := e.fastKey(input, meta); handled {
			return key, err
		}
	}
	return e.celKey(input, meta)
}

// Key derives the idempotency key of a run from its JSON input and
// additional_metadata. Empty input or metadata means an empty object;
// otherwise each must be a JSON object nested no deeper than the
// compiler's MaxInputDepth, or the result is an ErrInput *Error. Anything
// but a non-empty string within the length limit is an error too, an
// *Error of kind ErrEval, ErrNotString, ErrEmptyKey, ErrKeyTooLong,
// ErrCostLimit or ErrSizeLimit.
func (e *Expression) Key(input, meta []byte) (string, error) {
	if e.fast != nil {
		if key, handled, err := e.fastKeyJSON(input, meta); handled {
			return key, err
		}
	}
	return e.keyDecoded(input, meta)
}

// keyDecoded is Key without its fast path: decode both objects, then
// Key. The fast path must give exactly what this gives.
func (e *Expression) keyDecoded(input, meta []byte) (string, error) {
	in, err := decodeObject(varInput, input, e.maxDepth)
	if err != nil {
		return "", err
	}
	md, err := decodeObject(varMetadata, meta, e.maxDepth)
	if err != nil {
		return "", err
	}
	return e.keyMap(in, md)
}

// activation hands the two variables to the interpreter without building a
// map per evaluation.
type activation struct {
	input, meta map[string]any
	// schedule is set for a schedule's key (scheduleKeyJSON) only.
	schedule map[string]any
}

func (a *activation) ResolveName(name string) (any, bool) {
	switch name {
	case varInput:
		return a.input, true
	case varMetadata:
		return a.meta, true
	case varSchedule:
		if a.schedule != nil {
			return a.schedule, true
		}
	}
	return nil, false
}

func (a *activation) Parent() interpreter.Activation { return nil }

var activations = sync.Pool{New: func() any { return new(activation) }}

// celKey evaluates with the CEL interpreter. It is the reference behaviour
// the fast path must match.
func (e *Expression) celKey(input, meta map[string]any) (string, error) {
	if input == nil {
		input = emptyObject
	}
	if meta == nil {
		meta = emptyObject
	}
	prg := e.prg
	if e.bound != nil && e.bound.within(input, meta, e.costLimit) {
		prg = e.untracked
	}
	return e.eval(prg, input, meta)
}

// eval runs prg on non-nil input and meta.
func (e *Expression) eval(prg cel.Program, input, meta map[string]any) (string, error) {
	return e.evalWith(prg, input, meta, nil)
}

// evalWith is eval with the schedule variable bound (nil: unbound).
func (e *Expression) evalWith(prg cel.Program, input, meta, schedule map[string]any) (string, error) {
	act := activations.Get().(*activation)
	act.input, act.meta, act.schedule = input, meta, schedule
	out, _, err := prg.Eval(act)
	// The activation must not keep the run's data alive in the pool.
	act.input, act.meta, act.schedule = nil, nil, nil
	activations.Put(act)
	if err != nil {
		return "", e.evalError(err, input, meta)
	}
	s, ok := out.(types.String)
	if !ok {
		return "", &Error{Kind: ErrNotString, Expr: e.src, Type: out.Type().TypeName()}
	}
	return e.accept(string(s))
}

// accept applies the rules every key obeys, whichever path produced it.
func (e *Expression) accept(key string) (string, error) {
	if key == "" {
		return "", &Error{Kind: ErrEmptyKey, Expr: e.src}
	}
	if len(key) > e.maxKeyLength {
		return "", &Error{Kind: ErrKeyTooLong, Expr: e.src, Size: uint64(len(key)), Limit: uint64(e.maxKeyLength)}
	}
	return key, nil
}

// evalError turns a cel-go evaluation error into a typed one, naming the
// field that failed where the AST and the input tell which it was.
func (e *Expression) evalError(err error, input, meta map[string]any) error {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		return &Error{Kind: ErrCostLimit, Expr: e.src, Limit: e.costLimit}
	}
	var refused *limitExceeded
	if errors.As(err, &refused) {
		return refused.public(e.src)
	}
	ee := &Error{Kind: ErrEval, Expr: e.src, Message: err.Error()}
	var celErr *types.Err
	if errors.As(err, &celErr) {
		// cel labels an attribute error with the node of the whole select
		// chain; walking the input along that chain finds the failing step.
		if c, ok := e.chains[celErr.NodeID()]; ok {
			root := input
			if c.meta {
				root = meta
			}
			if _, step, res := c.walk(root); res == walkMissing || res == walkInList {
				ee.Field = c.paths[step]
				return ee
			}
		}
	}
	if key, ok := strings.CutPrefix(ee.Message, msgNoSuchKey); ok {
		ee.Field = e.fieldForKey(key)
	}
	return ee
}

// fieldForKey names the one chain step that selects key, or the bare key
// when none or several do.
func (e *Expression) fieldForKey(key string) string {
	field := ""
	for _, c := range e.chains {
		for i, k := range c.keys {
			if k != key {
				continue
			}
			if field != "" && field != c.paths[i] {
				return key
			}
			field = c.paths[i]
		}
	}
	if field == "" {
		return key
	}
	return field
}

// scheduleKeyJSON derives the key of one tick of a cron schedule from the
// schedule's JSON input and metadata (as Key), its name and the tick's
// nominal time, bound to schedule.name and schedule.time (see
// newScheduleCompiler). The errors are Key's. An expression compiled
// by a task compiler, which has no schedule variable, gets an ErrEval *Error.
func (e *Expression) scheduleKeyJSON(input, meta []byte, name string, tick time.Time) (string, error) {
	if !e.schedule {
		return "", &Error{Kind: ErrEval, Expr: e.src, Message: "the expression was not compiled for a schedule"}
	}
	in, err := decodeObject(varInput, input, e.maxDepth)
	if err != nil {
		return "", err
	}
	md, err := decodeObject(varMetadata, meta, e.maxDepth)
	if err != nil {
		return "", err
	}
	if in == nil {
		in = emptyObject
	}
	if md == nil {
		md = emptyObject
	}
	sched := map[string]any{"name": name, "time": tick.UTC()}
	// The cost bound and the fast path know input and metadata only: the
	// tracked program bounds what schedule adds.
	return e.evalWith(e.prg, in, md, sched)
}
