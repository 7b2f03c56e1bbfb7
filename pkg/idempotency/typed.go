package idempotency

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// CompileFor is Compile for an expression whose input is always a JSON
// encoding of a value of Go type input: it also checks the expression
// against that type's JSON shape, so a field the type does not have, or a
// value used as a type it does not have, fails here with an ErrCompile *Error
// that gives the position and, for a field, the fields that do exist.
//
// The shape is what encoding/json writes and reads back: json tag names
// (fields tagged "-" left out, embedded structs flattened), nested structs
// as objects, slices and arrays as lists, maps as maps with string keys,
// pointers, nil slices and nil maps as nullable, every number as a double,
// time.Time and []byte as strings, and a type with its own MarshalJSON or
// MarshalText as dyn. Numbers of different types compare by value, as
// they do in evaluation: input.count == 3, input.count > 2, input.n in
// [1, 2] and a list indexed by a double are accepted, while arithmetic
// across them (input.count + 1), which fails in evaluation, is refused,
// and so is == or in between unrelated types, which is always false there
// (see numeric.go). An input of type any, map[string]any,
// json.RawMessage or a json.Marshaler stays dynamic, as Compile has it;
// additional_metadata always does.
//
// The returned Expression is the one Compile returns: evaluation, its
// keys, limits and errors do not depend on input.
func (c *Compiler) CompileFor(expr string, input reflect.Type) (*Expression, error) {
	e, err := c.Compile(expr)
	if err != nil || input == nil || c.schedule {
		return e, err
	}
	te, err := c.typedEnv(input)
	if err != nil || te == nil {
		return e, err
	}
	if err := te.check(expr); err != nil {
		return nil, err
	}
	return e, nil
}

// typedEnv is an environment that declares input as one Go type's shape.
type typedEnv struct {
	env  *cel.Env
	prov *shapeProvider
}

// typedEnv returns the environment for input type t, built once per type;
// nil when t's input stays dynamic.
func (c *Compiler) typedEnv(t reflect.Type) (*typedEnv, error) {
	if te, ok := c.typed.Load(t); ok {
		return te.(*typedEnv), nil
	}
	var te *typedEnv
	if input, prov, ok := shapeOf(t); ok {
		env, err := newEnv(c.limits, false, input, prov)
		if err == nil {
			env, err = env.Extend(mixedNumericOptions()...)
		}
		if err != nil {
			return nil, fmt.Errorf("idempotency: declaring input as %s: %w", t, err)
		}
		te = &typedEnv{env: env, prov: prov}
	}
	got, _ := c.typed.LoadOrStore(t, te)
	return got.(*typedEnv), nil
}

// check type-checks expr, which has already compiled in the dynamic
// environment.
func (te *typedEnv) check(expr string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Kind: ErrCompile, Expr: expr, Message: fmt.Sprintf("internal error: %v", r)}
		}
	}()
	parsed, iss := te.env.Parse(expr)
	if iss != nil && iss.Err() != nil {
		return compileError(expr, iss)
	}
	root := parsed.NativeRep().Expr()
	selectLiteralIndexes(root)

	iss, misses := te.checkAST(parsed)
	if iss == nil || iss.Err() == nil {
		return nil
	}
	// A call that found no overload may mix numeric types as the
	// interpreter allows: check it as its mixed-numeric twin (numeric.go),
	// until no further call is renamed (a twin's result can let an
	// enclosing call check). A twin that fails too is then checked as the
	// function written again, so the errors are those of what was written.
	orig := map[int64]string{}
	for {
		twins := map[int64]string{}
		for _, e := range iss.Errors() {
			if _, done := orig[e.ExprID]; done || !strings.HasPrefix(e.Message, "found no matching overload for ") {
				continue
			}
			if at := findExpr(root, e.ExprID); at != nil && at.Kind() == ast.CallKind {
				if twin, ok := mixedNumeric[at.AsCall().FunctionName()]; ok {
					twins[e.ExprID] = twin
				}
			}
		}
		if len(twins) == 0 {
			break
		}
		maps.Copy(orig, renameCalls(root, twins))
		if iss, misses = te.checkAST(parsed); iss == nil || iss.Err() == nil {
			return nil
		}
	}
	back := map[int64]string{}
	for _, e := range iss.Errors() {
		if name, ok := orig[e.ExprID]; ok {
			back[e.ExprID] = name
		}
	}
	if len(back) > 0 {
		renameCalls(root, back)
		if iss, misses = te.checkAST(parsed); iss == nil || iss.Err() == nil {
			return nil
		}
	}
	ce := compileError(expr, iss)
	first := iss.Errors()[0]
	if field, ok := strings.CutPrefix(first.Message, "undefined field '"); ok {
		field = strings.TrimSuffix(field, "'")
		if msg := te.noField(root, first.ExprID, field, misses); msg != "" {
			ce.Message = msg + strings.TrimPrefix(ce.Message, first.Message)
		}
	}
	return ce
}

// checkAST type-checks parsed and returns the issues and the field
// lookups that failed.
func (te *typedEnv) checkAST(parsed *cel.Ast) (*cel.Issues, []fieldMiss) {
	te.prov.mu.Lock()
	defer te.prov.mu.Unlock()
	te.prov.misses = te.prov.misses[:0]
	_, iss := te.env.Check(parsed)
	misses := te.prov.misses
	te.prov.misses = nil
	return iss, misses
}

// findExpr returns the expression of root with the given ID, or nil.
func findExpr(root ast.Expr, id int64) ast.Expr {
	var at ast.Expr
	ast.PreOrderVisit(root, ast.NewExprVisitor(func(n ast.Expr) {
		if n.ID() == id {
			at = n
		}
	}))
	return at
}

// selectLiteralIndexes rewrites x["name"] as x.name, which means the same
// on a map and on dyn, so that a struct's field is checked whichever way
// it is written (a JSON name need not be a CEL identifier).
func selectLiteralIndexes(root ast.Expr) {
	fac := ast.NewExprFactory()
	ast.PostOrderVisit(root, ast.NewExprVisitor(func(n ast.Expr) {
		if n.Kind() != ast.CallKind {
			return
		}
		call := n.AsCall()
		if call.FunctionName() != operators.Index || call.IsMemberFunction() || len(call.Args()) != 2 {
			return
		}
		idx := call.Args()[1]
		if idx.Kind() != ast.LiteralKind {
			return
		}
		if s, ok := idx.AsLiteral().(types.String); ok {
			n.SetKindCase(fac.NewSelect(n.ID(), call.Args()[0], string(s)))
		}
	}))
}

// noField is the message for field missing from an object type: the path
// where it was selected, when that is a path from input, and the fields
// the type has.
func (te *typedEnv) noField(root ast.Expr, id int64, field string, misses []fieldMiss) string {
	var s *shapeStruct
	for _, m := range misses {
		if m.field == field {
			s = te.prov.structs[m.typeName]
			break
		}
	}
	if s == nil {
		return ""
	}
	fields := "none"
	if len(s.names) > 0 {
		fields = strings.Join(s.names, ", ")
	}
	msg := fmt.Sprintf("no field %s on %s; fields: %s", strconv.Quote(field), s.name, fields)
	if at := findExpr(root, id); at != nil {
		if c := chainOf(at); c != nil && !c.meta {
			msg = c.paths[len(c.paths)-1] + ": " + msg
		}
	}
	return msg
}
