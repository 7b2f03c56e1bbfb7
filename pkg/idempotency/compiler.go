package idempotency

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
)

// Defaults for the zero values of Options.
const (
	// MaxKeyLengthDefault bounds a key in bytes; keys are Redis key suffixes
	// and are echoed in errors and the CLI, so they are kept short.
	MaxKeyLengthDefault = 512
	// CostLimitDefault is in CEL runtime cost units: ample for field paths,
	// concatenation and a checksum, far too little for runaway comprehensions.
	CostLimitDefault uint64 = 10_000
	// CacheSizeDefault is how many compiled expressions a Compiler keeps.
	CacheSizeDefault = 1024
	// MaxInputDepthDefault bounds the nesting of JSON given to Key, so a
	// hostile payload cannot make decoding recurse without end.
	MaxInputDepthDefault = 64
	// MaxStringBytesDefault bounds every string or bytes value an evaluation
	// builds: a concatenation, replace, format, join, lowerAscii and the
	// like. A key is at most MaxKeyLength bytes and a string of this size
	// already costs thousands of units to read, so only a runaway
	// expression or input comes near it.
	MaxStringBytesDefault = 64 << 10
	// MaxListElementsDefault bounds every list an evaluation builds with
	// split or list concatenation.
	MaxListElementsDefault = 10_000
)

// Options configure a Compiler. Zero values mean the defaults above.
type Options struct {
	MaxKeyLength  int    // longest accepted key, in bytes
	CostLimit     uint64 // CEL runtime cost at which evaluation stops
	CacheSize     int    // compiled expressions kept, least recently used evicted first
	MaxInputDepth int    // deepest JSON nesting Key accepts; the top-level object is level 1
	// MaxStringBytes bounds, in bytes, every string or bytes value one
	// evaluation builds; a function that would build a longer one fails with
	// an ErrSizeLimit *Error before it allocates.
	MaxStringBytes int
	// MaxListElements bounds every list one evaluation builds (split, list
	// concatenation); a longer one fails with an ErrSizeLimit *Error.
	MaxListElements int
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxKeyLength < 0 || o.CacheSize < 0 || o.MaxInputDepth < 0 || o.MaxStringBytes < 0 || o.MaxListElements < 0 {
		return o, errors.New("idempotency: Options: MaxKeyLength, CacheSize, MaxInputDepth, MaxStringBytes and MaxListElements must not be negative")
	}
	if o.MaxKeyLength == 0 {
		o.MaxKeyLength = MaxKeyLengthDefault
	}
	if o.CostLimit == 0 {
		o.CostLimit = CostLimitDefault
	}
	if o.CacheSize == 0 {
		o.CacheSize = CacheSizeDefault
	}
	if o.MaxInputDepth == 0 {
		o.MaxInputDepth = MaxInputDepthDefault
	}
	if o.MaxStringBytes == 0 {
		o.MaxStringBytes = MaxStringBytesDefault
	}
	if o.MaxListElements == 0 {
		o.MaxListElements = MaxListElementsDefault
	}
	return o, nil
}

// Compiler turns expression source into Expressions. Building a CEL
// environment is costly, so one Compiler is meant to be shared; it is safe
// for concurrent use.
type Compiler struct {
	env      *cel.Env
	schedule bool // the environment declares schedule (newScheduleCompiler)
	opts     Options
	limits   *evalLimits
	prgOpts  []cel.ProgramOption

	// typed holds the environments of CompileFor, by input type
	// (reflect.Type to *typedEnv, nil for a dynamic input).
	typed sync.Map

	mu    sync.Mutex
	lru   *list.List               // of *Expression, most recently used first
	index map[string]*list.Element // by source
}

// NewCompiler builds the CEL environment shared by every expression it
// compiles.
func NewCompiler(opts Options) (*Compiler, error) {
	return newCompiler(opts, false)
}

// newScheduleCompiler is NewCompiler for the key expressions of cron
// schedules: their environment declares, beside input and
// additional_metadata, the variable schedule, a map<string, dyn> with
// schedule.name (string, the schedule's name) and schedule.time
// (google.protobuf.Timestamp, the tick's nominal time, in UTC). So
// string(schedule.time) is the tick in RFC 3339, as in the default
// `schedule.name + "@" + string(schedule.time)`, and
// schedule.time.getHours("Europe/Paris") is its hour in a zone. The limits
// and errors are a task compiler's; evaluate with scheduleKeyJSON
// (ScheduleKey does both).
func newScheduleCompiler(opts Options) (*Compiler, error) {
	return newCompiler(opts, true)
}

// scheduleCompiler compiles the key expressions of cron schedules, with
// default limits; made at first use and shared, as the environment and
// the cache of compiled expressions never change.
var scheduleCompiler = sync.OnceValues(func() (*Compiler, error) { return newScheduleCompiler(Options{}) })

// ScheduleKey compiles a cron schedule's key expression (see
// task.Schedule.KeyExpression) and returns the function that derives the
// key of one tick from the schedule's JSON input and metadata, its name
// and the tick's nominal time, bound to schedule.name and schedule.time.
// Its errors, compiling and evaluating, are *Error values. Compiled
// expressions are cached, so compiling one again costs a lookup.
func ScheduleKey(expr string) (func(input, meta []byte, name string, tick time.Time) (string, error), error) {
	c, err := scheduleCompiler()
	if err != nil {
		return nil, err
	}
	e, err := c.Compile(expr)
	if err != nil {
		return nil, err
	}
	return e.scheduleKeyJSON, nil
}

func newCompiler(opts Options, schedule bool) (*Compiler, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	limits := &evalLimits{
		cost:      opts.CostLimit,
		maxString: uint64(opts.MaxStringBytes),
		maxList:   uint64(opts.MaxListElements),
	}
	env, err := newEnv(limits, schedule, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("idempotency: building CEL environment: %w", err)
	}
	return &Compiler{
		schedule: schedule,
		env:      env,
		opts:     opts,
		limits:   limits,
		prgOpts:  programOptions(limits),
		lru:      list.New(),
		index:    make(map[string]*list.Element),
	}, nil
}

// Compile parses and type-checks expr. A given source is compiled once and
// the same *Expression is returned while it stays in the cache. Failures are
// *Errors of kind ErrCompile.
func (c *Compiler) Compile(expr string) (*Expression, error) {
	if e := c.cached(expr); e != nil {
		return e, nil
	}
	e, err := c.compile(expr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// Another goroutine may have compiled the same source meanwhile; keep
	// the first so callers always share one *Expression.
	if el, ok := c.index[expr]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*Expression), nil
	}
	c.index[expr] = c.lru.PushFront(e)
	for c.lru.Len() > c.opts.CacheSize {
		old := c.lru.Remove(c.lru.Back()).(*Expression)
		delete(c.index, old.src)
	}
	return e, nil
}

func (c *Compiler) cached(expr string) *Expression {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.index[expr]; ok {
		c.lru.MoveToFront(el)
		return el.Value.(*Expression)
	}
	return nil
}

func (c *Compiler) compile(expr string) (e *Expression, err error) {
	// cel-go reports problems as issues, but a malformed expression must
	// never take a task definition (or a fuzzer) down with a panic.
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, &Error{Kind: ErrCompile, Expr: expr, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	checked, iss := c.env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, compileError(expr, iss)
	}
	prg, err := c.env.Program(checked, c.prgOpts...)
	if err != nil {
		return nil, &Error{Kind: ErrCompile, Expr: expr, Message: err.Error()}
	}
	root := checked.NativeRep().Expr()
	e = &Expression{
		schedule:     c.schedule,
		src:          expr,
		prg:          prg,
		bound:        newCostBound(root),
		maxKeyLength: c.opts.MaxKeyLength,
		costLimit:    c.opts.CostLimit,
		maxDepth:     c.opts.MaxInputDepth,
		fast:         chainOf(root),
		chains:       make(map[int64]*chain),
	}
	if e.bound != nil {
		if e.untracked, err = c.env.Program(checked, untrackedProgramOptions(c.limits)...); err != nil {
			return nil, &Error{Kind: ErrCompile, Expr: expr, Message: err.Error()}
		}
	}
	ast.PreOrderVisit(root, ast.NewExprVisitor(func(n ast.Expr) {
		if ch := chainOf(n); ch != nil {
			e.chains[n.ID()] = ch
		}
	}))
	return e, nil
}

func compileError(expr string, iss *cel.Issues) *Error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return &Error{Kind: ErrCompile, Expr: expr, Message: iss.Err().Error()}
	}
	first := errs[0]
	ce := &Error{Kind: ErrCompile, Expr: expr, Message: first.Message}
	if loc := first.Location; loc != nil && loc.Line() > 0 {
		ce.Line = loc.Line()
		// cel counts columns from 0, and reports -1 for an empty expression.
		ce.Column = max(loc.Column()+1, 1)
	}
	if len(errs) > 1 {
		ce.Message += fmt.Sprintf(" (and %d more)", len(errs)-1)
	}
	return ce
}
