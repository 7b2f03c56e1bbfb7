package idempotency

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/decls"
	"github.com/google/cel-go/common/functions"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// The bounded functions. Each keeps cel-go's behaviour and adds a check in
// front of it: from the sizes of its arguments it computes what it will cost
// and how large a string or list it will build, and refuses (limitExceeded)
// when either is over the compiler's limits. The checks read lengths and
// make at most one pass over their arguments (parsing a regex's pattern is
// the only one that allocates, in proportion to the pattern), so a refusal
// costs no more than reading the arguments once. What the check lets
// through is bounded by the limits: cel-go's implementations that convert a
// string to runes or search it naively then work on at most about ten
// bytes per unit of the cost limit.

// Version of cel-go's strings extension the environment declares, pinned so
// that a cel-go upgrade cannot add a function that has no check here (the
// tests list every declared function). Version 5 only adds cel-go's own cost
// tracking, which costModel replaces.
const stringsVersion = 4

// maxFormatPrecision bounds %.Nf and %.Ne in format, as cel-go does by
// default from strings version 5 on.
const maxFormatPrecision = 100

// stringsFunctions are the strings extension's functions, each with the
// check run before it.
var stringsFunctions = map[string]func(l *evalLimits, args []ref.Val) ref.Val{
	"charAt":        checkCharAt,
	"indexOf":       checkSearch("indexOf"),
	"lastIndexOf":   checkSearch("lastIndexOf"),
	"lowerAscii":    checkRuneTransform("lowerAscii"),
	"upperAscii":    checkRuneTransform("upperAscii"),
	"reverse":       checkRuneTransform("reverse"),
	"trim":          checkTrim,
	"substring":     checkSubstring,
	"replace":       checkReplace,
	"split":         checkSplit,
	"join":          checkJoin,
	"format":        checkFormat,
	"strings.quote": checkQuote,
}

// stringsOptions declares the strings extension with every function's
// implementation replaced by its check followed by cel-go's implementation.
func stringsOptions(l *evalLimits) ([]cel.EnvOption, error) {
	lib := ext.Strings(ext.StringsVersion(stringsVersion), ext.StringsMaxPrecision(maxFormatPrecision))
	plain, err := cel.NewEnv(lib)
	if err != nil {
		return nil, err
	}
	opts := []cel.EnvOption{lib}
	for name, check := range stringsFunctions {
		fn, ok := plain.Functions()[name]
		if !ok {
			return nil, fmt.Errorf("idempotency: the strings extension has no function %s", name)
		}
		impls, err := fn.Bindings()
		if err != nil {
			return nil, err
		}
		var fnOpts []cel.FunctionOpt
		for _, o := range fn.OverloadDecls() {
			var impl *functions.Overload
			for _, b := range impls {
				if b.Operator == o.ID() {
					impl = b
				}
			}
			if impl == nil {
				return nil, fmt.Errorf("idempotency: the strings extension has no implementation of %s", o.ID())
			}
			fnOpts = append(fnOpts, overloadOf(o, boundedBinding(l, len(o.ArgTypes()), check, impl)))
		}
		opts = append(opts, cel.Function(name, fnOpts...))
	}
	return opts, nil
}

// overloadOf declares o again with a binding.
func overloadOf(o *decls.OverloadDecl, opts ...cel.OverloadOpt) cel.FunctionOpt {
	if o.IsMemberFunction() {
		return cel.MemberOverload(o.ID(), o.ArgTypes(), o.ResultType(), opts...)
	}
	return cel.Overload(o.ID(), o.ArgTypes(), o.ResultType(), opts...)
}

// boundedBinding runs check, then impl when check lets the call through.
func boundedBinding(l *evalLimits, arity int, check func(*evalLimits, []ref.Val) ref.Val, impl *functions.Overload) cel.OverloadOpt {
	call := func(args []ref.Val) ref.Val {
		if refused := check(l, args); refused != nil {
			return refused
		}
		switch {
		case len(args) == 1 && impl.Unary != nil:
			return impl.Unary(args[0])
		case len(args) == 2 && impl.Binary != nil:
			return impl.Binary(args[0], args[1])
		case impl.Function != nil:
			return impl.Function(args...)
		}
		return types.NoSuchOverloadErr()
	}
	switch arity {
	case 1:
		return cel.UnaryBinding(func(a ref.Val) ref.Val { return call([]ref.Val{a}) })
	case 2:
		return cel.BinaryBinding(func(a, b ref.Val) ref.Val { return call([]ref.Val{a, b}) })
	}
	return cel.FunctionBinding(func(args ...ref.Val) ref.Val { return call(args) })
}

// redeclare declares a standard function again, with its overloads and a
// new implementation. The standard library binds _+_ and matches to one
// function for all overloads, which cel-go does not let an environment
// replace, so newEnv leaves them out of the standard library and declares
// them here.
func redeclare(fn *decls.FunctionDecl, impl cel.FunctionOpt) cel.EnvOption {
	var opts []cel.FunctionOpt
	for _, o := range fn.OverloadDecls() {
		opts = append(opts, overloadOf(o))
	}
	return cel.Function(fn.Name(), append(opts, impl)...)
}

// The arguments' types were checked when the expression was compiled, but
// input's fields are dyn, so each check also makes sure of them at run time
// and leaves anything unexpected to cel-go's implementation, which reports it.

func str(args []ref.Val, i int) (string, bool) {
	if i >= len(args) {
		return "", false
	}
	s, ok := args[i].(types.String)
	return string(s), ok
}

func integer(args []ref.Val, i int) (int64, bool) {
	if i >= len(args) {
		return 0, false
	}
	n, ok := args[i].(types.Int)
	return int64(n), ok
}

func checkCharAt(l *evalLimits, args []ref.Val) ref.Val {
	s, ok := str(args, 0)
	if !ok {
		return nil
	}
	g := guard{limits: l, function: "charAt"}
	return g.cost(charAtCost(uint64(len(s))))
}

func checkSearch(function string) func(*evalLimits, []ref.Val) ref.Val {
	return func(l *evalLimits, args []ref.Val) ref.Val {
		s, ok1 := str(args, 0)
		sub, ok2 := str(args, 1)
		if !ok1 || !ok2 {
			return nil
		}
		g := guard{limits: l, function: function}
		return g.cost(searchCost(uint64(len(s)), uint64(len(sub))))
	}
}

// runeBytes is the length of string([]rune(s)): s itself unless it holds
// invalid UTF-8, each byte of which becomes a 3-byte U+FFFD.
func runeBytes(s string) uint64 {
	if utf8.ValidString(s) {
		return uint64(len(s))
	}
	var n uint64
	for _, r := range s {
		n += uint64(utf8.RuneLen(r))
	}
	return n
}

// checkRuneTransform checks a function that rebuilds its whole argument
// character by character.
func checkRuneTransform(function string) func(*evalLimits, []ref.Val) ref.Val {
	return func(l *evalLimits, args []ref.Val) ref.Val {
		s, ok := str(args, 0)
		if !ok {
			return nil
		}
		g := guard{limits: l, function: function}
		n := uint64(len(s))
		// The result is at least as long as s; that alone may settle it.
		if refused := g.cost(transformCost(n, n)); refused != nil {
			return refused
		}
		g.read(n)
		result := runeBytes(s)
		if refused := g.cost(transformCost(n, result)); refused != nil {
			return refused
		}
		return g.text(result)
	}
}

// checkTrim: trim returns a part of its argument and builds nothing.
func checkTrim(l *evalLimits, args []ref.Val) ref.Val {
	s, ok := str(args, 0)
	if !ok {
		return nil
	}
	g := guard{limits: l, function: "trim"}
	n := uint64(len(s))
	if refused := g.cost(transformCost(n, 0)); refused != nil {
		return refused
	}
	g.read(n)
	return g.cost(transformCost(n, uint64(len(strings.TrimSpace(s)))))
}

func checkSubstring(l *evalLimits, args []ref.Val) ref.Val {
	s, ok := str(args, 0)
	start, ok2 := integer(args, 1)
	if !ok || !ok2 {
		return nil
	}
	end := int64(math.MaxInt64)
	if len(args) > 2 {
		if end, ok = integer(args, 2); !ok {
			return nil
		}
	}
	g := guard{limits: l, function: "substring"}
	n := uint64(len(s))
	if refused := g.cost(transformCost(n, 0)); refused != nil {
		return refused
	}
	// The characters in [start, end); indexes out of range fail in cel-go's
	// implementation, which builds nothing then.
	g.read(n)
	var result uint64
	i := int64(0)
	for _, r := range s {
		if i >= end {
			break
		}
		if i >= start {
			result += uint64(utf8.RuneLen(r))
		}
		i++
	}
	if refused := g.cost(transformCost(n, result)); refused != nil {
		return refused
	}
	return g.text(result)
}

// checkReplace counts the replacements first: the result's length follows.
func checkReplace(l *evalLimits, args []ref.Val) ref.Val {
	s, ok1 := str(args, 0)
	old, ok2 := str(args, 1)
	repl, ok3 := str(args, 2)
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	limit := int64(-1)
	if len(args) > 3 {
		var ok bool
		if limit, ok = integer(args, 3); !ok {
			return nil
		}
	}
	g := guard{limits: l, function: "replace"}
	n, m := uint64(len(s)), uint64(len(old))
	if refused := g.cost(replaceSearchCost(n, m)); refused != nil {
		return refused
	}
	count := uint64(0)
	if limit != 0 {
		// strings.Count of "" is one more than the characters, as many as
		// the places strings.Replace puts repl.
		g.read(n)
		count = uint64(strings.Count(s, old))
		if limit > 0 {
			count = min(count, uint64(limit))
		}
	}
	if count == 0 {
		return g.cost(replaceCost(n, m, n))
	}
	var result uint64
	if len(repl) >= len(old) {
		result = add(n, mul(count, uint64(len(repl)-len(old))))
	} else {
		result = n - count*uint64(len(old)-len(repl))
	}
	if refused := g.cost(replaceCost(n, m, result)); refused != nil {
		return refused
	}
	return g.text(result)
}

// checkSplit counts the parts first.
func checkSplit(l *evalLimits, args []ref.Val) ref.Val {
	s, ok1 := str(args, 0)
	sep, ok2 := str(args, 1)
	if !ok1 || !ok2 {
		return nil
	}
	limit := int64(-1)
	if len(args) > 2 {
		var ok bool
		if limit, ok = integer(args, 2); !ok {
			return nil
		}
	}
	g := guard{limits: l, function: "split"}
	n := uint64(len(s))
	if refused := g.cost(splitCost(n, 0)); refused != nil {
		return refused
	}
	var parts uint64
	switch {
	case limit == 0:
	case sep == "":
		g.read(n)
		parts = uint64(utf8.RuneCountInString(s))
	default:
		g.read(n)
		parts = uint64(strings.Count(s, sep)) + 1
	}
	if limit > 0 {
		parts = min(parts, uint64(limit))
	}
	if refused := g.cost(splitCost(n, parts)); refused != nil {
		return refused
	}
	return g.list(parts)
}

// checkJoin adds up the elements' lengths, stopping once past the limit.
func checkJoin(l *evalLimits, args []ref.Val) ref.Val {
	if len(args) == 0 {
		return nil
	}
	list, ok := args[0].(traits.Lister)
	if !ok {
		return nil
	}
	sep := ""
	if len(args) > 1 {
		if sep, ok = str(args, 1); !ok {
			return nil
		}
	}
	g := guard{limits: l, function: "join"}
	elems := listLen(list)
	if refused := g.cost(joinCost(elems, 0)); refused != nil {
		return refused
	}
	var result, seen uint64
	for it := list.Iterator(); it.HasNext() == types.True && result <= l.maxString; seen++ {
		s, ok := it.Next().(types.String)
		if !ok {
			return nil // cel-go's join reports the element
		}
		if seen > 0 {
			result = add(result, uint64(len(sep)))
		}
		result = add(result, uint64(len(s)))
	}
	g.read(seen)
	if refused := g.cost(joinCost(elems, result)); refused != nil {
		return refused
	}
	return g.text(result)
}

// checkQuote: quote escapes seven control characters, the backslash and the
// double quote with two bytes each, and turns each byte of invalid UTF-8
// into a 3-byte U+FFFD.
func checkQuote(l *evalLimits, args []ref.Val) ref.Val {
	s, ok := str(args, 0)
	if !ok {
		return nil
	}
	g := guard{limits: l, function: "strings.quote"}
	n := uint64(len(s))
	if refused := g.cost(quoteCost(n, n+2)); refused != nil {
		return refused
	}
	g.read(n)
	result := uint64(2)
	for _, r := range s {
		switch r {
		case '\a', '\b', '\f', '\n', '\r', '\t', '\v', '\\', '"':
			result += 2
		default:
			result += uint64(utf8.RuneLen(r))
		}
	}
	if refused := g.cost(quoteCost(n, result)); refused != nil {
		return refused
	}
	return g.text(result)
}

func checkFormat(l *evalLimits, args []ref.Val) ref.Val {
	format, ok := str(args, 0)
	if !ok || len(args) < 2 {
		return nil
	}
	list, ok := args[1].(traits.Lister)
	if !ok {
		return nil
	}
	g := guard{limits: l, function: "format"}
	n := uint64(len(format))
	if refused := g.cost(formatCost(n, 0)); refused != nil {
		return refused
	}
	result, visited := formatSize(format, list, l.maxString)
	g.read(add(n, visited))
	if refused := g.cost(formatCost(n, result)); refused != nil {
		return refused
	}
	return g.text(result)
}

// formatSize is the length of what format builds before it returns or
// fails, following cel-go's parsing of the format string (version 2 of the
// format clauses), or some length past limit once it is known to pass it;
// and how many values it looked at.
func formatSize(format string, args traits.Lister, limit uint64) (total, visited uint64) {
	argc := int64(listLen(args))
	next := int64(0)
	for i := 0; i < len(format) && total <= limit; {
		if format[i] != '%' {
			total++
			i++
			continue
		}
		if i+1 < len(format) && format[i+1] == '%' {
			total++
			i += 2
			continue
		}
		if i+1 >= len(format) || next >= argc {
			return total, visited // format fails here
		}
		j := i + 1
		precision := 6
		if format[j] == '.' {
			j++
			digits := j
			for j < len(format) && format[j] >= '0' && format[j] <= '9' {
				j++
			}
			if j >= len(format) {
				return total, visited
			}
			p, err := strconv.Atoi(format[digits:j])
			if err != nil || p > maxFormatPrecision {
				return total, visited
			}
			precision = p
		}
		size, ok := clauseSize(format[j], precision, args.Get(types.Int(next)), limit-total, &visited)
		if !ok {
			return total, visited
		}
		total = add(total, size)
		i = j + 1
		next++
	}
	return total, visited
}

// clauseSize is the length of arg formatted by verb, and false when format
// rejects the pair.
func clauseSize(verb byte, precision int, arg ref.Val, budget uint64, visited *uint64) (uint64, bool) {
	var buf [512]byte
	*visited++
	switch verb {
	case 's':
		return stringSize(arg, budget, visited)
	case 'd':
		switch v := arg.Value().(type) {
		case int64, uint64:
			return stringSize(arg, budget, visited)
		case float64:
			return floatSize(v, 'f', -1), true
		}
	case 'f', 'e':
		switch v := arg.Value().(type) {
		case int64:
			return floatSize(float64(v), verb, precision), true
		case uint64:
			return floatSize(float64(v), verb, precision), true
		case float64:
			return floatSize(v, verb, precision), true
		}
	case 'b', 'o', 'x', 'X':
		base := 16
		switch verb {
		case 'b':
			base = 2
		case 'o':
			base = 8
		}
		switch v := arg.Value().(type) {
		case bool:
			if verb == 'b' {
				return 1, true
			}
		case int64:
			return uint64(len(strconv.AppendInt(buf[:0], v, base))), true
		case uint64:
			return uint64(len(strconv.AppendUint(buf[:0], v, base))), true
		case string:
			if base == 16 {
				return mul(2, uint64(len(v))), true
			}
		case []byte:
			if base == 16 {
				return mul(2, uint64(len(v))), true
			}
		}
	}
	return 0, false
}

func floatSize(v float64, verb byte, precision int) uint64 {
	switch {
	case math.IsNaN(v):
		return 3
	case math.IsInf(v, 1):
		return 8
	case math.IsInf(v, -1):
		return 9
	}
	var buf [512]byte
	return uint64(len(strconv.AppendFloat(buf[:0], v, verb, precision, 64)))
}

// stringSize is the length of arg formatted by %s, and false when format
// rejects it. Lists and maps are walked until past budget, each value
// looked at counted in visited.
func stringSize(arg ref.Val, budget uint64, visited *uint64) (uint64, bool) {
	var buf [64]byte
	*visited++
	switch arg.Type() {
	case types.BoolType:
		if arg == types.True {
			return 4, true
		}
		return 5, true
	case types.IntType:
		v, ok := arg.Value().(int64)
		return uint64(len(strconv.AppendInt(buf[:0], v, 10))), ok
	case types.UintType:
		v, ok := arg.Value().(uint64)
		return uint64(len(strconv.AppendUint(buf[:0], v, 10))), ok
	case types.DoubleType:
		v, ok := arg.Value().(float64)
		return floatSize(v, 'f', -1), ok
	case types.BytesType:
		v, ok := arg.Value().([]byte)
		return uint64(len(v)), ok
	case types.StringType:
		v, ok := arg.Value().(string)
		return uint64(len(v)), ok
	case types.DurationType:
		v, ok := arg.Value().(time.Duration)
		return floatSize(v.Seconds(), 'f', -1) + 1, ok
	case types.TimestampType:
		v, ok := arg.Value().(time.Time)
		return uint64(len(v.UTC().AppendFormat(buf[:0], time.RFC3339Nano))), ok
	case types.NullType:
		return 4, true
	case types.TypeType:
		v, ok := arg.Value().(string)
		return uint64(len(v)), ok
	case types.ListType:
		list, ok := arg.(traits.Lister)
		if !ok {
			return 0, false
		}
		total := uint64(2)
		for i, it := 0, list.Iterator(); it.HasNext() == types.True && total <= budget; i++ {
			if i > 0 {
				total += 2
			}
			n, ok := stringSize(it.Next(), budget-min(total, budget), visited)
			if !ok {
				return 0, false
			}
			total = add(total, n)
		}
		return total, true
	case types.MapType:
		m, ok := arg.(traits.Mapper)
		if !ok {
			return 0, false
		}
		total := uint64(2)
		for i, it := 0, m.Iterator(); it.HasNext() == types.True && total <= budget; i++ {
			if i > 0 {
				total += 2
			}
			k := it.Next()
			v, found := m.Find(k)
			if !found {
				return 0, false
			}
			kn, ok1 := stringSize(k, budget-min(total, budget), visited)
			vn, ok2 := stringSize(v, budget-min(total, budget), visited)
			if !ok1 || !ok2 {
				return 0, false
			}
			total = add(total, kn, 2, vn)
		}
		return total, true
	}
	return 0, false
}

// concat is _+_ with strings, bytes and lists checked before they are
// joined. The standard library's implementation follows the checks.
func (l *evalLimits) concat(lhs, rhs ref.Val) ref.Val {
	g := guard{limits: l, function: "+"}
	switch a := lhs.(type) {
	case types.String:
		if b, ok := rhs.(types.String); ok {
			if refused := g.concatText(uint64(len(a)), uint64(len(b))); refused != nil {
				return refused
			}
		}
	case types.Bytes:
		if b, ok := rhs.(types.Bytes); ok {
			if refused := g.concatText(uint64(len(a)), uint64(len(b))); refused != nil {
				return refused
			}
		}
	case traits.Lister:
		if b, ok := rhs.(traits.Lister); ok {
			// cel-go joins lists without copying them, but comprehensions
			// build their results this way, one element at a time.
			if refused := g.list(add(listLen(a), listLen(b))); refused != nil {
				return refused
			}
		}
	}
	if a, ok := lhs.(traits.Adder); ok {
		return a.Add(rhs)
	}
	return types.MaybeNoSuchOverloadErr(lhs)
}

func (g *guard) concatText(a, b uint64) ref.Val {
	if refused := g.cost(concatCost(a, b)); refused != nil {
		return refused
	}
	return g.text(add(a, b))
}

// matches checks a pattern given at run time before compiling it; a
// constant pattern is compiled once, by boundedRegex.
func (l *evalLimits) matches(s, pattern ref.Val) ref.Val {
	sv, ok1 := s.(types.String)
	pv, ok2 := pattern.(types.String)
	if ok1 && ok2 {
		g := guard{limits: l, function: overloads.Matches}
		n, m := uint64(len(sv)), uint64(len(pv))
		// The pattern's length alone may settle it, before parsing.
		if refused := g.cost(matchCost(n, m, 0)); refused != nil {
			return refused
		}
		g.read(m)
		if refused := g.cost(matchCost(n, m, regexProgramSize(string(pv)))); refused != nil {
			return refused
		}
	}
	if matcher, ok := s.(traits.Matcher); ok {
		return matcher.Match(pattern)
	}
	return types.MaybeNoSuchOverloadErr(s)
}

// boundedRegex replaces cel-go's compilation of constant patterns (an
// optimization that would otherwise bypass l.matches): the pattern is
// measured once, and each match is checked against the string's length.
func (l *evalLimits) boundedRegex(overloadID string) *interpreter.RegexOptimization {
	return &interpreter.RegexOptimization{
		Function:   overloads.Matches,
		OverloadID: overloadID,
		RegexIndex: 1,
		Factory: func(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
			m, program := uint64(len(pattern)), regexProgramSize(pattern)
			var re *regexp.Regexp
			if matchCost(0, m, program) <= l.cost {
				// A pattern that no string could be matched against within
				// the limit is not compiled at all.
				var err error
				if re, err = regexp.Compile(pattern); err != nil {
					return nil, err
				}
			}
			return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
				if len(args) != 2 {
					return types.NoSuchOverloadErr()
				}
				s, ok := args[0].(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(args[0])
				}
				g := guard{limits: l, function: overloads.Matches}
				if refused := g.cost(matchCost(uint64(len(s)), m, program)); refused != nil {
					return refused
				}
				return types.Bool(re.MatchString(string(s)))
			}), nil
		},
	}
}

// checksum is checksum() with its cost checked before hashing.
func (l *evalLimits) checksum(v ref.Val) ref.Val {
	if s, ok := v.(types.String); ok {
		g := guard{limits: l, function: checksumFunction}
		if refused := g.cost(checksumCost(uint64(len(s)))); refused != nil {
			return refused
		}
	}
	return checksum(v)
}

// boundedEquality replaces cel-go's == and != (which the planner builds
// itself, without the function's binding) by the same comparison with its
// cost checked first: comparing nested input converts every element on the
// way, a dozen times the input's size in garbage.
func (l *evalLimits) boundedEquality() interpreter.InterpretableDecoratorV2 {
	model := newCostModel(l.cost)
	return func(i interpreter.InterpretableV2) (interpreter.InterpretableV2, error) {
		call, ok := i.(interpreter.InterpretableCall)
		if !ok || len(call.Args()) != 2 {
			return i, nil
		}
		function := call.Function()
		if function != operators.Equals && function != operators.NotEquals {
			return i, nil
		}
		name := "=="
		if function == operators.NotEquals {
			name = "!="
		}
		return interpreter.NewCall(call.ID(), function, call.OverloadID(), call.Args(), func(args ...ref.Val) ref.Val {
			g := guard{limits: l, function: name}
			var walked uint64
			cost := model.equalityCost(args[0], args[1], &walked)
			g.read(walked)
			if refused := g.cost(cost); refused != nil {
				return refused
			}
			eq := types.Equal(args[0], args[1])
			if function == operators.NotEquals {
				return types.Bool(eq != types.True)
			}
			return eq
		}), nil
	}
}
