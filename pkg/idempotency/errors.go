package idempotency

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// The kinds of *Error. Each is a sentinel for errors.Is and the Kind of the
// *Error that matches it, so callers branch on the kind of failure without
// caring about the details the *Error carries.
var (
	// ErrCompile: the expression does not parse or type-check. It is
	// returned when a task is defined, so a bad expression never reaches a
	// trigger. Message, Line and Column say what and where.
	ErrCompile = errors.New("idempotency: invalid expression")
	// ErrNotString: the expression evaluated to something other than a
	// string, whose CEL type is Type.
	ErrNotString = errors.New("idempotency: key is not a string")
	// ErrEmptyKey: the expression evaluated to "". An empty key would make
	// every such run a duplicate of every other, so it is refused.
	ErrEmptyKey = errors.New("idempotency: key is empty")
	// ErrKeyTooLong: the key is Size bytes, over the compiler's
	// MaxKeyLength (Limit).
	ErrKeyTooLong = errors.New("idempotency: key too long")
	// ErrEval: the evaluation failed, most often because the input lacks
	// the field the expression reads (Field).
	ErrEval = errors.New("idempotency: evaluation failed")
	// ErrCostLimit: the evaluation stopped because it would have passed the
	// compiler's CostLimit (Limit). Function is empty when the running
	// total passed it; otherwise it names the function or operator that
	// refused to run because its own cost, Size, was over it. An ErrSizeLimit
	// error matches ErrCostLimit too: every evaluation stopped at one of
	// the compiler's evaluation limits does.
	ErrCostLimit = errors.New("idempotency: cost limit exceeded")
	// ErrSizeLimit: the evaluation stopped before Function built a string
	// longer than the compiler's MaxStringBytes or a list longer than its
	// MaxListElements (Limit, in Unit); Size is what it would have built.
	// Nothing of that size was allocated.
	ErrSizeLimit = errors.New("idempotency: size limit exceeded")
	// ErrInput: the run's input or metadata cannot be evaluated against
	// (invalid JSON, JSON that is not an object, nesting deeper than the
	// limit); Message says which and why, and Expr is empty.
	ErrInput = errors.New("idempotency: invalid input")
)

// Units of an ErrSizeLimit *Error.
const (
	UnitBytes    = "bytes"    // a string or bytes value, limited by MaxStringBytes
	UnitElements = "elements" // a list, limited by MaxListElements
)

// Error is every failure of this package: an expression that does not
// compile, or a key that cannot be derived. Kind says which (one of the
// sentinels above, which errors.Is matches); the other fields are set as
// the sentinel of that kind documents.
type Error struct {
	// Kind is one of the sentinels; match it with errors.Is(err, ErrEval)
	// and the like.
	Kind error
	// Expr is the whole expression (the message quotes at most its first
	// 200 bytes).
	Expr string
	// Message is cel's description of the problem (ErrCompile, ErrEval,
	// e.g. "no such key: id") or what is wrong with the input (ErrInput).
	Message string
	// Line and Column are the 1-based position of a compile problem,
	// Column in characters; 0 if unknown.
	Line, Column int
	// Field is the path of the field an evaluation could not read, such as
	// "input.order.id", when it can be determined; otherwise a bare key
	// name or "".
	Field string
	// Type is the CEL type of a result that is not a string: "int",
	// "double", "map", "null_type", ...
	Type string
	// Function names the function or operator a limit stopped, e.g.
	// "indexOf", "replace", "+", "split"; "" for the running total.
	Function string
	// Unit is UnitBytes or UnitElements, for ErrSizeLimit.
	Unit string
	// Size is what passed Limit: the key's length in bytes
	// (ErrKeyTooLong), what Function would have cost (ErrCostLimit) or
	// built (ErrSizeLimit).
	Size uint64
	// Limit is the limit passed, in the unit of Size.
	Limit uint64
}

// maxQuotedExpr bounds how much of an expression an error message quotes:
// messages end up in logs on every failed trigger, and an expression may be
// long. The error keeps the whole expression in its Expr field.
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

// Error names the expression, what went wrong and, for a limit, the limit.
func (e *Error) Error() string {
	q := quoteExpr(e.Expr)
	switch {
	case errors.Is(e.Kind, ErrCompile):
		if e.Line > 0 {
			return fmt.Sprintf("idempotency: compiling %s: %d:%d: %s", q, e.Line, e.Column, e.Message)
		}
		return fmt.Sprintf("idempotency: compiling %s: %s", q, e.Message)
	case errors.Is(e.Kind, ErrNotString):
		return fmt.Sprintf("idempotency: expression %s evaluated to a value of type %s, want a string", q, e.Type)
	case errors.Is(e.Kind, ErrEmptyKey):
		return fmt.Sprintf("idempotency: expression %s evaluated to an empty string", q)
	case errors.Is(e.Kind, ErrKeyTooLong):
		return fmt.Sprintf("idempotency: expression %s produced a key of %d bytes, over the limit of %d", q, e.Size, e.Limit)
	case errors.Is(e.Kind, ErrCostLimit):
		if e.Function != "" {
			return fmt.Sprintf("idempotency: evaluating %s: %s would cost %d, over the cost limit of %d", q, e.Function, e.Size, e.Limit)
		}
		return fmt.Sprintf("idempotency: evaluating %s: exceeded the cost limit of %d", q, e.Limit)
	case errors.Is(e.Kind, ErrSizeLimit):
		what := "a string"
		if e.Unit == UnitElements {
			what = "a list"
		}
		return fmt.Sprintf("idempotency: evaluating %s: %s would build %s of %d %s, over the limit of %d",
			q, e.Function, what, e.Size, e.Unit, e.Limit)
	case errors.Is(e.Kind, ErrInput):
		return "idempotency: invalid input: " + e.Message
	}
	// ErrEval, and an Error built without a Kind.
	if e.Field != "" {
		return fmt.Sprintf("idempotency: evaluating %s: field %s: %s", q, e.Field, e.Message)
	}
	return fmt.Sprintf("idempotency: evaluating %s: %s", q, e.Message)
}

// Is reports whether target is e's Kind, or ErrCostLimit for an
// ErrSizeLimit error.
func (e *Error) Is(target error) bool {
	return target == e.Kind || (e.Kind == ErrSizeLimit && target == ErrCostLimit)
}
