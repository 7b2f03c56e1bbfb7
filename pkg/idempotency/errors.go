package idempotency

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Sentinels let callers branch on the kind of failure with errors.Is without
// caring about the details carried by the typed errors below.
var (
	// ErrCompile matches a *CompileError.
	ErrCompile = errors.New("idempotency: invalid expression")
	// ErrNotString matches a *ResultTypeError.
	ErrNotString = errors.New("idempotency: key is not a string")
	// ErrEmptyKey matches an *EmptyKeyError.
	ErrEmptyKey = errors.New("idempotency: key is empty")
	// ErrKeyTooLong matches a *KeyTooLongError.
	ErrKeyTooLong = errors.New("idempotency: key too long")
	// ErrEval matches an *EvalError.
	ErrEval = errors.New("idempotency: evaluation failed")
	// ErrCostLimit matches a *CostLimitError, and a *SizeLimitError too:
	// every evaluation stopped at one of the compiler's evaluation limits.
	ErrCostLimit = errors.New("idempotency: cost limit exceeded")
	// ErrSizeLimit matches a *SizeLimitError.
	ErrSizeLimit = errors.New("idempotency: size limit exceeded")
	// ErrInput matches an *InputError.
	ErrInput = errors.New("idempotency: invalid input")
)

// maxQuotedExpr bounds how much of an expression an error message quotes:
// messages end up in logs on every failed trigger, and an expression may be
// long. The typed errors keep the whole expression in their Expr field.
const maxQuotedExpr = 200

func quoteExpr(expr string) string {
	if len(expr) <= maxQuotedExpr {
		return strconv.Quote(expr)
	}
	cut := maxQuotedExpr
	for cut > 0 && !utf8.RuneStart(expr[cut]) {
		cut--
	}
	return strconv.Quote(expr[:cut]) + "..."
}

// CompileError reports an expression that does not parse or type-check.
// It is returned when a task is defined, so a bad expression never reaches a
// trigger.
type CompileError struct {
	Expr    string
	Message string // cel's description of the first problem
	Line    int    // 1-based line of the problem, 0 if unknown
	Column  int    // 1-based column (in characters) of the problem, 0 if unknown
}

// Error names the expression and what went wrong.
func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("idempotency: compiling %s: %d:%d: %s", quoteExpr(e.Expr), e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("idempotency: compiling %s: %s", quoteExpr(e.Expr), e.Message)
}

// Is reports whether target is ErrCompile.
func (e *CompileError) Is(target error) bool { return target == ErrCompile }

// Caret renders the offending line of the expression with a '^' under the
// column of the problem, for display in a terminal. It returns "" when the
// position is unknown.
func (e *CompileError) Caret() string {
	if e.Line < 1 || e.Column < 1 {
		return ""
	}
	lines := strings.Split(e.Expr, "\n")
	if e.Line > len(lines) {
		return ""
	}
	line := strings.TrimSuffix(lines[e.Line-1], "\r")
	var pad strings.Builder
	col := 1
	for _, r := range line {
		if col >= e.Column {
			break
		}
		// Tabs stay tabs so the caret lines up however the terminal expands them.
		if r == '\t' {
			pad.WriteByte('\t')
		} else {
			pad.WriteByte(' ')
		}
		col++
	}
	// A column past the end of the line (an unexpected end of input) gets
	// its caret just after the last character.
	return line + "\n" + pad.String() + "^"
}

// ResultTypeError reports an expression that evaluated to something other
// than a string.
type ResultTypeError struct {
	Expr string
	Type string // the CEL type of the result: "int", "double", "map", "null_type", ...
}

// Error names the expression and what went wrong.
func (e *ResultTypeError) Error() string {
	return fmt.Sprintf("idempotency: expression %s evaluated to a value of type %s, want a string", quoteExpr(e.Expr), e.Type)
}

// Is reports whether target is ErrNotString.
func (e *ResultTypeError) Is(target error) bool { return target == ErrNotString }

// EmptyKeyError reports an expression that evaluated to "". An empty key would
// make every such run a duplicate of every other, so it is refused.
type EmptyKeyError struct {
	Expr string
}

// Error names the expression and what went wrong.
func (e *EmptyKeyError) Error() string {
	return fmt.Sprintf("idempotency: expression %s evaluated to an empty string", quoteExpr(e.Expr))
}

// Is reports whether target is ErrEmptyKey.
func (e *EmptyKeyError) Is(target error) bool { return target == ErrEmptyKey }

// KeyTooLongError reports a key longer than the compiler's MaxKeyLength.
type KeyTooLongError struct {
	Expr   string
	Length int // bytes
	Limit  int // bytes
}

// Error names the expression and what went wrong.
func (e *KeyTooLongError) Error() string {
	return fmt.Sprintf("idempotency: expression %s produced a key of %d bytes, over the limit of %d", quoteExpr(e.Expr), e.Length, e.Limit)
}

// Is reports whether target is ErrKeyTooLong.
func (e *KeyTooLongError) Is(target error) bool { return target == ErrKeyTooLong }

// EvalError reports an evaluation that failed, most often because the input
// lacks a field the expression reads.
type EvalError struct {
	Expr string
	// Field is the path of the field that could not be read, such as
	// "input.order.id", when it can be determined; otherwise a bare key name
	// or "".
	Field   string
	Message string // cel's message, e.g. "no such key: id"
}

// Error names the expression and what went wrong.
func (e *EvalError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("idempotency: evaluating %s: field %s: %s", quoteExpr(e.Expr), e.Field, e.Message)
	}
	return fmt.Sprintf("idempotency: evaluating %s: %s", quoteExpr(e.Expr), e.Message)
}

// Is reports whether target is ErrEval.
func (e *EvalError) Is(target error) bool { return target == ErrEval }

// CostLimitError reports an evaluation stopped because it would have passed
// the compiler's CostLimit. Function is empty when the evaluation's running
// total passed the limit; otherwise it names the function or operator that
// refused to run because its own cost, Cost, was over the limit.
type CostLimitError struct {
	Expr     string
	Limit    uint64
	Function string // e.g. "indexOf", "replace", "matches"; "" for the running total
	Cost     uint64 // what the call would have cost, when Function is set
}

// Error names the expression and what went wrong.
func (e *CostLimitError) Error() string {
	if e.Function != "" {
		return fmt.Sprintf("idempotency: evaluating %s: %s would cost %d, over the cost limit of %d", quoteExpr(e.Expr), e.Function, e.Cost, e.Limit)
	}
	return fmt.Sprintf("idempotency: evaluating %s: exceeded the cost limit of %d", quoteExpr(e.Expr), e.Limit)
}

// Is reports whether target is ErrCostLimit.
func (e *CostLimitError) Is(target error) bool { return target == ErrCostLimit }

// Units of a SizeLimitError.
const (
	UnitBytes    = "bytes"    // a string or bytes value, limited by MaxStringBytes
	UnitElements = "elements" // a list, limited by MaxListElements
)

// SizeLimitError reports an evaluation stopped before a function or operator
// built a string longer than the compiler's MaxStringBytes or a list longer
// than its MaxListElements. Nothing of that size was allocated.
type SizeLimitError struct {
	Expr     string
	Function string // e.g. "replace", "+", "format", "split"
	Unit     string // UnitBytes or UnitElements
	Size     uint64 // what the call would have built
	Limit    uint64
}

// Error names the expression, the function and the limit.
func (e *SizeLimitError) Error() string {
	what := "a string"
	if e.Unit == UnitElements {
		what = "a list"
	}
	return fmt.Sprintf("idempotency: evaluating %s: %s would build %s of %d %s, over the limit of %d",
		quoteExpr(e.Expr), e.Function, what, e.Size, e.Unit, e.Limit)
}

// Is reports whether target is ErrSizeLimit or ErrCostLimit.
func (e *SizeLimitError) Is(target error) bool {
	return target == ErrSizeLimit || target == ErrCostLimit
}

// InputError reports run input or metadata that cannot be evaluated against:
// invalid JSON, JSON that is not an object, or nesting deeper than the limit.
type InputError struct {
	Message string
}

// Error says what is wrong with the input.
func (e *InputError) Error() string {
	return "idempotency: invalid input: " + e.Message
}

// Is reports whether target is ErrInput.
func (e *InputError) Is(target error) bool { return target == ErrInput }
