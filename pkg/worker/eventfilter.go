package worker

import (
	"encoding/json"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// eventFilterCostLimit bounds one evaluation of an event filter, as the
// idempotency expressions are bounded.
const eventFilterCostLimit = 100000

// compileEventFilter compiles a WaitForEvent filter: a CEL expression over
// input (the event's payload) and metadata that yields a bool. The
// returned function says whether an event's payload and metadata (JSON)
// pass; "" passes every event.
func compileEventFilter(src string) (func(payload, meta []byte) (bool, error), error) {
	if src == "" {
		return func([]byte, []byte) (bool, error) { return true, nil }, nil
	}
	env, err := cel.NewEnv(
		cel.Variable("input", cel.DynType),
		cel.Variable("metadata", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
	)
	if err != nil {
		return nil, fmt.Errorf("worker: event filter %q: %w", src, err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("worker: event filter %q does not compile: %w", src, iss.Err())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("worker: event filter %q yields %s, not a bool", src, t)
	}
	prg, err := env.Program(ast, cel.CostLimit(eventFilterCostLimit))
	if err != nil {
		return nil, fmt.Errorf("worker: event filter %q: %w", src, err)
	}
	return func(payload, meta []byte) (bool, error) {
		var in any
		if err := json.Unmarshal(payload, &in); err != nil {
			return false, fmt.Errorf("event filter %q: the payload is not JSON: %w", src, err)
		}
		md := map[string]any{}
		if len(meta) > 0 {
			if err := json.Unmarshal(meta, &md); err != nil {
				return false, fmt.Errorf("event filter %q: the metadata is not a JSON object: %w", src, err)
			}
		}
		out, _, err := prg.Eval(map[string]any{"input": in, "metadata": md})
		if err != nil {
			// A payload the filter cannot read (a missing field) does not
			// pass; the wait goes on.
			return false, nil //nolint:nilerr // not an error of the wait
		}
		b, ok := out.Value().(bool)
		if !ok {
			return false, fmt.Errorf("event filter %q yielded %v, not a bool", src, out.Value())
		}
		return b, nil
	}, nil
}
