package idempotency

import (
	"math/bits"
	"unicode/utf8"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// cel-go enforces a cost limit by observing every step of an evaluation,
// which makes a typical key expression two to three times slower to
// evaluate. Most key expressions, though, are straight-line string
// building ("order:" + input.id, checksum(...), lowerAscii()) whose cost
// cannot run away: it is bounded by the size of the strings they read. For
// those, costBound computes a safe upper bound on the cost from the input
// actually given, and when that bound is within the limit the expression is
// evaluated by a program without cost tracking. The result is the same,
// since tracking only observes; an input that could come near the limit is
// evaluated with tracking as before.

// boundedFunctions are the functions and operators whose cel-go runtime cost
// grows at most linearly with the strings they are given and whose result is
// no longer than those strings together, or is a number, a bool or a short
// conversion. Anything quadratic (contains, indexOf, matches, replace),
// producing lists (split) or taking lists (join, in) is absent.
var boundedFunctions = map[string]bool{}

// transformFunctions are cel's string transforms, charged the length of their
// result on top of the traversal.
var transformFunctions = map[string]bool{
	"lowerAscii": true, "upperAscii": true, "trim": true, "substring": true, "charAt": true,
}

// conversionFunctions may make a string out of something that is not one.
var conversionFunctions = map[string]bool{"string": true, "checksum": true}

func init() {
	for _, fn := range []string{
		operators.Add, operators.Subtract, operators.Multiply, operators.Divide,
		operators.Modulo, operators.Negate,
		operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals,
		operators.LogicalAnd, operators.LogicalOr, operators.LogicalNot, operators.Conditional,
		"size", "string", "int", "uint", "double", "bool", "startsWith", "endsWith", "checksum",
	} {
		boundedFunctions[fn] = true
	}
	for fn := range transformFunctions {
		boundedFunctions[fn] = true
	}
}

// conversionBytes bounds the length of a string made by a conversion such as
// string(1.5) (at most 24 bytes) or by checksum (64 hex digits).
const conversionBytes = 64

// costBound describes an expression eligible for evaluation without cost
// tracking. Its cel-go cost is at most
//
//	2*nodes + calls*(size/10 + 1) + transforms*size
//
// where size bounds every string in the evaluation: 2 covers the unit cost of
// a select or call and the rounding of charAt, each call may traverse its
// arguments at 0.1 per byte, and a transform also pays for its result.
type costBound struct {
	nodes      uint64 // AST nodes, chain steps counted one each
	calls      uint64
	transforms uint64
	fixedBytes uint64   // string and bytes literals, plus conversions' output
	leaves     []*chain // every select chain whose value the expression reads
}

// newCostBound returns nil when e is not straight-line string building.
func newCostBound(e ast.Expr) *costBound {
	b := &costBound{}
	if !b.add(e) {
		return nil
	}
	return b
}

func (b *costBound) add(e ast.Expr) bool {
	b.nodes++
	switch e.Kind() {
	case ast.LiteralKind:
		switch v := e.AsLiteral().(type) {
		case types.String:
			b.fixedBytes += uint64(len(v))
		case types.Bytes:
			b.fixedBytes += uint64(len(v))
		}
		return true
	case ast.SelectKind:
		sel := e.AsSelect()
		if sel.IsTestOnly() {
			// has() looks a key up without reading a value's size.
			op := sel.Operand()
			if op.Kind() == ast.IdentKind {
				return isVariable(op.AsIdent())
			}
			c := chainOf(op)
			if c == nil {
				return false
			}
			b.nodes += uint64(len(c.keys))
			return true
		}
		return b.addChain(e)
	case ast.CallKind:
		call := e.AsCall()
		fn := call.FunctionName()
		if fn == operators.Index {
			return b.addChain(e)
		}
		if !boundedFunctions[fn] {
			return false
		}
		b.calls++
		if transformFunctions[fn] {
			b.transforms++
		}
		if conversionFunctions[fn] {
			b.fixedBytes += conversionBytes
		}
		if call.IsMemberFunction() && !b.add(call.Target()) {
			return false
		}
		for _, arg := range call.Args() {
			if !b.add(arg) {
				return false
			}
		}
		return true
	}
	// A bare variable is a whole map, and lists, maps and comprehensions have
	// costs that grow with their elements.
	return false
}

func (b *costBound) addChain(e ast.Expr) bool {
	c := chainOf(e)
	if c == nil {
		return false
	}
	b.nodes += uint64(len(c.keys))
	b.leaves = append(b.leaves, c)
	return true
}

func isVariable(name string) bool { return name == varInput || name == varMetadata }

// within reports whether evaluating the expression on this input certainly
// costs no more than limit.
func (b *costBound) within(input, meta map[string]any, limit uint64) bool {
	cost, ok := b.maxCost(input, meta, limit)
	return ok && cost <= limit
}

// maxCost bounds the cost of evaluating the expression on this input. ok is
// false when no bound is known or the bound passes limit on the way.
func (b *costBound) maxCost(input, meta map[string]any, limit uint64) (cost uint64, ok bool) {
	// No string in the evaluation is longer than everything it could be
	// built from.
	size := b.fixedBytes
	for _, c := range b.leaves {
		root := input
		if c.meta {
			root = meta
		}
		v, _, res := c.walk(root)
		switch res {
		case walkMissing, walkInList:
			continue // evaluation fails here; an error has no size to speak of
		case walkUnknown:
			return 0, false
		}
		switch t := v.(type) {
		case string:
			// A transform turns each byte of invalid UTF-8 into a 3-byte
			// U+FFFD, so such a string can grow past the bound.
			if !utf8.ValidString(t) {
				return 0, false
			}
			size += uint64(len(t))
		case float64, bool, nil:
			size++
		default:
			// Lists and maps have element-wise costs, e.g. in comparisons.
			return 0, false
		}
		if size > limit {
			return 0, false
		}
	}
	// Very large limits could overflow the arithmetic; mulAdd reports it.
	cost, ok = mulAdd(2, b.nodes, 0)
	if ok {
		cost, ok = mulAdd(b.calls, size/10+1, cost)
	}
	if ok {
		cost, ok = mulAdd(b.transforms, size, cost)
	}
	return cost, ok
}

// mulAdd returns a*b + c, and false if that overflows.
func mulAdd(a, b, c uint64) (uint64, bool) {
	hi, lo := bits.Mul64(a, b)
	sum, carry := bits.Add64(lo, c, 0)
	return sum, hi == 0 && carry == 0
}
