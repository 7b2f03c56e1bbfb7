package idempotency

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// cel-go adds up an evaluation's cost after each call returns, so a single
// call could do any amount of work or build a string of any size before the
// limit was looked at: "a".replace("", input.s) with two 100 kB strings asks
// for 10 GB. Every function that can build something larger than its
// arguments, or work longer than their length, therefore checks first:
// before it allocates or loops it computes what it will charge and what it
// will build from the sizes of its arguments, and refuses with an error
// naming itself and the limit when either is over. What it charges is
// computed by the same formulas afterwards (see costModel), so a call that
// passed its check is also counted in the evaluation's total.

// evalLimits are a Compiler's bounds on one evaluation.
type evalLimits struct {
	cost      uint64 // Options.CostLimit
	maxString uint64 // Options.MaxStringBytes
	maxList   uint64 // Options.MaxListElements
}

// limitKind says which limit a call would have passed.
type limitKind uint8

const (
	limitCost limitKind = iota
	limitString
	limitList
)

// limitExceeded is the error a bounded function returns, inside a cel error
// value, when it refuses to run. Expression.evalError turns it into a
// ErrCostLimit or ErrSizeLimit *Error naming the expression.
type limitExceeded struct {
	function string
	kind     limitKind
	need     uint64
	limit    uint64
	// spent is the cost of the checks that led to the refusal, which the
	// call is charged: exists() and || go on past an error, and a call
	// refused again and again must still use up the evaluation's budget.
	spent uint64
}

func (e *limitExceeded) Error() string {
	switch e.kind {
	case limitString:
		return fmt.Sprintf("%s would build a string of %d bytes, over the limit of %d", e.function, e.need, e.limit)
	case limitList:
		return fmt.Sprintf("%s would build a list of %d elements, over the limit of %d", e.function, e.need, e.limit)
	}
	return fmt.Sprintf("%s would cost %d, over the cost limit of %d", e.function, e.need, e.limit)
}

// public returns the exported error for expression expr.
func (e *limitExceeded) public(expr string) error {
	switch e.kind {
	case limitString:
		return &Error{Kind: ErrSizeLimit, Expr: expr, Function: e.function, Unit: UnitBytes, Size: e.need, Limit: e.limit}
	case limitList:
		return &Error{Kind: ErrSizeLimit, Expr: expr, Function: e.function, Unit: UnitElements, Size: e.need, Limit: e.limit}
	}
	return &Error{Kind: ErrCostLimit, Expr: expr, Limit: e.limit, Function: e.function, Size: e.need}
}

// refusal returns the limitExceeded a call's result carries, or nil.
func refusal(result ref.Val) *limitExceeded {
	err, ok := result.(*types.Err)
	if !ok {
		return nil
	}
	var refused *limitExceeded
	if errors.As(err, &refused) {
		return refused
	}
	return nil
}

// guard runs the checks of one call of function.
type guard struct {
	limits   *evalLimits
	function string
	spent    uint64
}

// read records a pass of the checks over n bytes (or elements).
func (g *guard) read(n uint64) { g.spent = add(g.spent, traversal(n)) }

// cost returns an error value when the call, costing cost, would pass the
// cost limit on its own, or nil.
func (g *guard) cost(cost uint64) ref.Val {
	if cost > g.limits.cost {
		return g.refuse(limitCost, cost, g.limits.cost)
	}
	return nil
}

// text returns an error value when the call would build a string (or
// bytes) of size bytes over the limit, or nil.
func (g *guard) text(size uint64) ref.Val {
	if size > g.limits.maxString {
		return g.refuse(limitString, size, g.limits.maxString)
	}
	return nil
}

// list returns an error value when the call would build a list of n
// elements over the limit, or nil.
func (g *guard) list(n uint64) ref.Val {
	if n > g.limits.maxList {
		return g.refuse(limitList, n, g.limits.maxList)
	}
	return nil
}

func (g *guard) refuse(kind limitKind, need, limit uint64) ref.Val {
	return types.WrapErr(&limitExceeded{
		function: g.function, kind: kind, need: need, limit: limit, spent: max(1, g.spent),
	})
}

// The cost formulas. They follow cel-go's (a traversal costs 0.1 per byte, a
// transform also pays 1 per byte of its result, a search the product of its
// lengths), with three differences: sizes are in bytes rather than
// characters, so they are known without a pass over the string; a call is
// charged for every byte it reads, including the ones cel-go treats as free
// (size() of a string, conversions parsing a string, a search for "");
// and format and strings.quote are charged for what they build, like
// concatenation.

// traversal is the cost of reading n bytes: ceil(n/10).
func traversal(n uint64) uint64 {
	if n > math.MaxUint64-9 {
		return math.MaxUint64 / 10
	}
	return (n + 9) / 10
}

// add returns the sum of its arguments, or MaxUint64 when that overflows.
func add(xs ...uint64) uint64 {
	var sum uint64
	for _, x := range xs {
		var carry uint64
		sum, carry = bits.Add64(sum, x, 0)
		if carry != 0 {
			return math.MaxUint64
		}
	}
	return sum
}

// mul returns a*b, or MaxUint64 when that overflows.
func mul(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	if hi != 0 {
		return math.MaxUint64
	}
	return lo
}

// callCostUnit is what cel-go charges for making any call.
const callCostUnit = 1

// listCreateCost is what cel-go charges for creating a list.
const listCreateCost = 10

func charAtCost(n uint64) uint64 { return add(callCostUnit, traversal(n), 1) }

// searchCost is indexOf's and lastIndexOf's: every position of the target
// compared with the whole needle, and at least one pass over the target.
func searchCost(n, m uint64) uint64 { return add(callCostUnit, traversal(mul(n, max(m, 1)))) }

// transformCost is a pass over the argument plus the result built.
func transformCost(n, result uint64) uint64 { return add(callCostUnit, traversal(n), result) }

// replaceSearchCost is the part of replace's cost known before counting.
func replaceSearchCost(n, m uint64) uint64 {
	return add(callCostUnit, traversal(mul(max(n, 1), max(m, 1))))
}

func replaceCost(n, m, result uint64) uint64 { return add(replaceSearchCost(n, m), result) }

func splitCost(n, elems uint64) uint64 {
	return add(callCostUnit, traversal(add(n, 1)), elems, listCreateCost)
}

func joinCost(elems, result uint64) uint64 {
	return add(callCostUnit, traversal(add(elems, 1)), result)
}

// formatCost charges format like a concatenation of its pieces.
func formatCost(formatLen, result uint64) uint64 { return add(traversal(formatLen), traversal(result)) }

func quoteCost(n, result uint64) uint64 { return add(traversal(n), traversal(result)) }

// checksumCost is 0.1 per byte hashed.
func checksumCost(n uint64) uint64 { return add(1, n/10) }

func concatCost(l, r uint64) uint64 { return traversal(add(l, r)) }

// readCost is a call that reads n bytes and builds nothing larger, such as
// size() of a string or int() of one.
func readCost(n uint64) uint64 { return max(1, traversal(n)) }

// matchCost follows cel-go, a pass over the string for every four units of
// the pattern, with the pattern measured by its compiled size where that is
// larger than its text: "(a{1000}){1000}" is short but compiles to a million
// instructions.
func matchCost(n, pattern, program uint64) uint64 {
	return mul(traversal(add(n, 1)), (max(pattern, program)+3)/4)
}
