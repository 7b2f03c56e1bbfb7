package idempotency

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
)

// A typed input declares every number double (shape.go), while literals
// and size() are int or uint. The evaluation environment sees input as dyn,
// and its interpreter compares numbers by value whatever their types:
// 3.0 == 3, 2.5 > 2, 3.0 in [1, 2, 3], [1.0] == [1], a list indexed by 1.0
// or 1u, a conditional with an int and a double branch. The CEL checker
// knows none of this for declared types, so the typed environment declares
// it: cel-go's own cross-type ordering overloads, and for the functions
// below a mixed-numeric twin that a call is checked as when the function
// itself found no matching overload (see typedEnv.check). The twins have
// no implementation: that environment never evaluates. Arithmetic across
// numeric types (input.count + 1) fails at run time and stays undeclared.
// TestCompileForAgreesWithEvaluation holds checker and interpreter
// together.

// mixedNumeric names the check-only twin of each function that accepts
// numbers of different types at run time. A name that starts with @
// cannot be written in an expression.
var mixedNumeric = map[string]string{
	operators.Equals:      "@mixed_numeric_equals",
	operators.NotEquals:   "@mixed_numeric_not_equals",
	operators.In:          "@mixed_numeric_in",
	operators.Conditional: "@mixed_numeric_conditional",
	operators.Index:       "@mixed_numeric_index",
}

// mixedNumericOptions declares the twins: == and != between numbers of
// different types, between lists of them and between maps with them as
// values; in over a list of another numeric type or a map keyed by one
// (a map key is never a double); a conditional whose branches are
// different numeric types, of type dyn; a list index of type uint or
// double. And cross-type ordering (<, <=, >, >=), which cel-go declares
// behind an option.
func mixedNumericOptions() []cel.EnvOption {
	nums := []*cel.Type{cel.IntType, cel.UintType, cel.DoubleType}
	k := cel.TypeParamType("K")
	v := cel.TypeParamType("V")
	var eq, ne, in, cond []cel.FunctionOpt
	for _, a := range nums {
		for _, b := range nums {
			if a == b {
				continue
			}
			id := a.String() + "_" + b.String()
			for _, args := range [][]*cel.Type{
				{a, b},
				{cel.ListType(a), cel.ListType(b)},
				{cel.MapType(k, a), cel.MapType(k, b)},
			} {
				sig := args[0].String() + "_" + args[1].String()
				eq = append(eq, cel.Overload("mixed_numeric_equals_"+sig, args, cel.BoolType))
				ne = append(ne, cel.Overload("mixed_numeric_not_equals_"+sig, args, cel.BoolType))
			}
			in = append(in, cel.Overload("mixed_numeric_in_list_"+id, []*cel.Type{a, cel.ListType(b)}, cel.BoolType))
			if b != cel.DoubleType {
				in = append(in, cel.Overload("mixed_numeric_in_map_"+id, []*cel.Type{a, cel.MapType(b, v)}, cel.BoolType))
			}
			cond = append(cond, cel.Overload("mixed_numeric_conditional_"+id, []*cel.Type{cel.BoolType, a, b}, cel.DynType))
		}
	}
	elem := cel.TypeParamType("A")
	return []cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		cel.Function(mixedNumeric[operators.Equals], eq...),
		cel.Function(mixedNumeric[operators.NotEquals], ne...),
		cel.Function(mixedNumeric[operators.In], in...),
		cel.Function(mixedNumeric[operators.Conditional], cond...),
		cel.Function(mixedNumeric[operators.Index],
			cel.Overload("mixed_numeric_index_list_uint", []*cel.Type{cel.ListType(elem), cel.UintType}, elem),
			cel.Overload("mixed_numeric_index_list_double", []*cel.Type{cel.ListType(elem), cel.DoubleType}, elem)),
	}
}

// renameCalls sets the function of each call in root whose ID is a key of
// names to that name, and returns the calls' previous names by ID.
func renameCalls(root ast.Expr, names map[int64]string) map[int64]string {
	prev := map[int64]string{}
	fac := ast.NewExprFactory()
	ast.PostOrderVisit(root, ast.NewExprVisitor(func(n ast.Expr) {
		name, ok := names[n.ID()]
		if !ok || n.Kind() != ast.CallKind {
			return
		}
		call := n.AsCall()
		prev[n.ID()] = call.FunctionName()
		n.SetKindCase(fac.NewCall(n.ID(), name, call.Args()...))
	}))
	return prev
}
