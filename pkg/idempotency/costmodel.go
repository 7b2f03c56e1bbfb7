package idempotency

import (
	"regexp/syntax"

	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// costModel is the cost tracker's price list: what each call is charged
// after it returns, from its arguments and its result. It is keyed by
// function name and the runtime types of the arguments rather than by
// overload, because input's fields are dyn: cel-go then dispatches at
// runtime, the call has no overload ID, and its own price list charges
// input.a + input.b a flat 1 however long the strings are.
//
// Each price is the same formula the function's bounded implementation
// checks before it runs (see bounded.go), so a call that was let through is
// charged what it was checked against. Functions the model does not name
// keep cel-go's price.
type costModel struct {
	// budget bounds the walk over a list or map whose size sets a price:
	// past it the call costs more than the whole limit anyway.
	budget uint64
}

func newCostModel(limit uint64) costModel {
	return costModel{budget: add(mul(limit, 10), 10)}
}

// CallCost implements interpreter.ActualCostEstimator.
func (m costModel) CallCost(function, _ string, args []ref.Val, result ref.Val) *uint64 {
	cost, ok := m.cost(function, args, result)
	if !ok {
		return nil
	}
	return &cost
}

func (m costModel) cost(function string, args []ref.Val, result ref.Val) (uint64, bool) {
	if refused := refusal(result); refused != nil {
		// A refused call is charged what its checks cost, once: an argument
		// that is the same error was refused by an earlier call.
		for _, a := range args {
			if a == result {
				return 1, true
			}
		}
		return refused.spent, true
	}
	arg := func(i int) uint64 {
		if i < len(args) {
			return byteLen(args[i])
		}
		return 0
	}
	isText := func(i int) bool {
		if i >= len(args) {
			return false
		}
		switch args[i].(type) {
		case types.String, types.Bytes:
			return true
		}
		return false
	}
	switch function {
	case "charAt":
		return charAtCost(arg(0)), true
	case "indexOf", "lastIndexOf":
		return searchCost(arg(0), arg(1)), true
	case "lowerAscii", "upperAscii", "trim", "substring", "reverse":
		return transformCost(arg(0), byteLen(result)), true
	case "replace":
		return replaceCost(arg(0), arg(1), byteLen(result)), true
	case "split":
		return splitCost(arg(0), listLen(result)), true
	case "join":
		return joinCost(arg(0), byteLen(result)), true
	case "format":
		return formatCost(arg(0), byteLen(result)), true
	case "strings.quote":
		return quoteCost(arg(0), byteLen(result)), true
	case checksumFunction:
		return checksumCost(arg(0)), true
	case operators.Add:
		if isText(0) && isText(1) {
			return concatCost(arg(0), arg(1)), true
		}
	case overloads.Matches:
		if isText(0) && isText(1) {
			pattern := string(args[1].(types.String))
			return matchCost(arg(0), arg(1), regexProgramSize(pattern)), true
		}
	case overloads.Size:
		if isText(0) {
			return readCost(arg(0)), true
		}
	case operators.Equals, operators.NotEquals:
		if len(args) == 2 {
			return m.equalityCost(args[0], args[1], nil), true
		}
	case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
		if isText(0) && isText(1) {
			return max(1, traversal(min(arg(0), arg(1)))), true
		}
	case overloads.Contains:
		if isText(0) && isText(1) {
			return max(1, mul(traversal(arg(0)), traversal(arg(1)))), true
		}
	case overloads.StartsWith, overloads.EndsWith:
		if isText(1) {
			return traversal(arg(1)), true
		}
	case operators.In, operators.OldIn, "in":
		if len(args) == 2 {
			needle := readCost(m.deepSize(args[0], nil))
			switch c := args[1].(type) {
			case traits.Lister:
				return max(1, mul(listLen(c), needle)), true
			case traits.Mapper:
				return add(1, needle), true
			}
		}
	case overloads.TypeConvertInt, overloads.TypeConvertUint, overloads.TypeConvertDouble,
		overloads.TypeConvertBool, overloads.TypeConvertBytes, overloads.TypeConvertString,
		overloads.TypeConvertTimestamp, overloads.TypeConvertDuration:
		// Parsing reads the whole string, and a failure quotes it.
		if isText(0) {
			return readCost(arg(0)), true
		}
	case overloads.TimeGetFullYear, overloads.TimeGetMonth, overloads.TimeGetDayOfYear,
		overloads.TimeGetDayOfMonth, overloads.TimeGetDate, overloads.TimeGetDayOfWeek,
		overloads.TimeGetHours, overloads.TimeGetMinutes, overloads.TimeGetSeconds,
		overloads.TimeGetMilliseconds:
		// A time zone is looked up by name.
		if isText(1) {
			return add(1, traversal(arg(1))), true
		}
	}
	return 0, false
}

// equalityCost is what comparing a and b costs: a pass over the smaller.
// walked, when not nil, is increased by the number of list elements and map
// entries looked at to find out.
func (m costModel) equalityCost(a, b ref.Val, walked *uint64) uint64 {
	return max(1, traversal(min(m.deepSize(a, walked), m.deepSize(b, walked))))
}

// byteLen is the length in bytes of a string or bytes value, the number of
// elements of a list or map, and 1 for anything else.
func byteLen(v ref.Val) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(len(t))
	case types.Bytes:
		return uint64(len(t))
	}
	return listLen(v)
}

// listLen is the size of a list or map, and 1 for anything else.
func listLen(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok && n >= 0 {
			return uint64(n)
		}
	}
	return 1
}

// deepSize is what comparing v reads at most: its bytes if it is a string or
// bytes value, one per element plus the elements' own sizes for a list or
// map, 1 otherwise. The walk stops once past the model's budget; each
// element and entry it looks at is counted in walked unless that is nil.
func (m costModel) deepSize(v ref.Val, walked *uint64) uint64 {
	switch t := v.(type) {
	case types.String:
		return uint64(len(t))
	case types.Bytes:
		return uint64(len(t))
	case traits.Lister:
		if native, ok := t.Value().([]any); ok {
			return m.nativeSize(native, walked)
		}
		var n uint64
		for it := t.Iterator(); n <= m.budget && it.HasNext() == types.True; {
			n = add(n, 1, m.deepSize(it.Next(), walked))
			count(walked)
		}
		return n
	case traits.Mapper:
		if native, ok := t.Value().(map[string]any); ok {
			return m.nativeSize(native, walked)
		}
		var n uint64
		for it := t.Iterator(); n <= m.budget && it.HasNext() == types.True; {
			k := it.Next()
			n = add(n, 1, m.deepSize(k, walked))
			if val, found := t.Find(k); found {
				n = add(n, m.deepSize(val, walked))
			}
			count(walked)
		}
		return n
	}
	return 1
}

// nativeSize is deepSize of a value as encoding/json decodes it, walked
// without converting it to CEL values.
func (m costModel) nativeSize(v any, walked *uint64) uint64 {
	switch t := v.(type) {
	case string:
		return uint64(len(t))
	case []any:
		var n uint64
		for _, e := range t {
			if n > m.budget {
				break
			}
			n = add(n, 1, m.nativeSize(e, walked))
			count(walked)
		}
		return n
	case map[string]any:
		var n uint64
		for k, e := range t {
			if n > m.budget {
				break
			}
			n = add(n, 1, uint64(len(k)), m.nativeSize(e, walked))
			count(walked)
		}
		return n
	}
	return 1
}

func count(walked *uint64) {
	if walked != nil {
		*walked++
	}
}

// regexProgramSize estimates how many instructions pattern compiles to,
// without compiling it: repetitions multiply what they repeat, which the
// pattern's length does not show. A pattern that does not parse is 0; it
// fails before anything is matched.
func regexProgramSize(pattern string) uint64 {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	return add(regexNodeSize(re), 2)
}

func regexNodeSize(re *syntax.Regexp) uint64 {
	var subs uint64
	for _, sub := range re.Sub {
		subs = add(subs, regexNodeSize(sub))
	}
	switch re.Op {
	case syntax.OpLiteral:
		return max(1, uint64(len(re.Rune)))
	case syntax.OpCapture:
		return add(subs, 2)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return add(subs, 1)
	case syntax.OpRepeat:
		n := re.Max
		if n < 0 {
			n = re.Min + 1
		}
		return add(mul(uint64(max(n, 1)), add(subs, 1)), 1)
	case syntax.OpAlternate:
		return add(subs, uint64(len(re.Sub)))
	case syntax.OpConcat:
		return subs
	}
	return max(subs, 1)
}
