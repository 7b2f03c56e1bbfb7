package webhook

import (
	"fmt"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"google.golang.org/protobuf/types/known/structpb"
)

// program is one compiled expression of a source.
type program struct {
	field string // key, payload or deliveryId
	src   string
	prg   cel.Program
}

// newEnv declares what a source's expressions see: body (the request's
// JSON body), headers (lower-case names to values) and source (its name),
// with the CEL standard library and the strings extension.
func newEnv() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("body", cel.DynType),
		cel.Variable("headers", cel.MapType(cel.StringType, cel.StringType)),
		cel.Variable("source", cel.StringType),
		ext.Strings(),
	)
}

// compile checks an expression once, when the configuration is read. It
// returns the program, or what is wrong with the expression.
func compile(field, src string) (*program, string) {
	env, err := newEnv()
	if err != nil {
		return nil, "the expression environment: " + err.Error()
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Sprintf("%s expression %q does not compile: %v", field, clip(src), iss.Err())
	}
	prg, err := env.Program(ast, cel.CostLimit(CostLimitDefault), cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Sprintf("%s expression %q: %v", field, clip(src), err)
	}
	return &program{field: field, src: src, prg: prg}, ""
}

// eval runs the expression and returns its value as JSON would decode it
// (string, float64, bool, nil, []any, map[string]any).
func (p *program) eval(vars map[string]any) (any, error) {
	out, _, err := p.prg.Eval(vars)
	if err != nil {
		return nil, refuse(ErrMapping, "%s expression %q: %v", p.field, clip(p.src), err)
	}
	v, err := out.ConvertToNative(reflect.TypeFor[*structpb.Value]())
	if err != nil {
		return nil, refuse(ErrMapping, "%s expression %q gave a value that is not JSON (%s)", p.field, clip(p.src), out.Type().TypeName())
	}
	return v.(*structpb.Value).AsInterface(), nil
}
