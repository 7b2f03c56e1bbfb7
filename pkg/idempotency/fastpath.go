package idempotency

import (
	"strconv"

	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// Most key expressions are a plain field path such as input.id. For those a
// key is derived with direct map lookups, which is an order of magnitude
// cheaper than running the CEL interpreter. The rules below reproduce CEL's
// answers for every value encoding/json produces; for any other Go value the
// lookup reports walkUnknown and the caller falls back to CEL, so the fast
// path never has to guess.

// chain is a select chain rooted at one of the variables, such as
// input.order.id or additional_metadata["tenant"].
type chain struct {
	meta  bool     // rooted at additional_metadata rather than input
	keys  []string // the selected keys, in order
	paths []string // paths[i] renders the chain up to and including keys[i]
}

// walkResult classifies the outcome of following a chain.
type walkResult uint8

const (
	walkOK      walkResult = iota
	walkMissing            // CEL: "no such key: <key>"
	walkInList             // CEL: "unsupported index type 'string' in list"
	walkUnknown            // a value of a Go type JSON never produces: ask CEL
)

// Messages CEL gives for the failures walk recognises.
const (
	msgNoSuchKey = "no such key: "
	msgInList    = "unsupported index type 'string' in list"
)

// chainOf returns the chain e is, or nil when e is anything else. A bare
// variable is not a chain: it always evaluates to a map and gains nothing
// from a fast path.
func chainOf(e ast.Expr) *chain {
	var keys []string
	for {
		switch e.Kind() {
		case ast.SelectKind:
			sel := e.AsSelect()
			if sel.IsTestOnly() {
				return nil
			}
			keys = append(keys, sel.FieldName())
			e = sel.Operand()
			continue
		case ast.CallKind:
			call := e.AsCall()
			if call.FunctionName() != operators.Index || call.IsMemberFunction() || len(call.Args()) != 2 {
				return nil
			}
			idx := call.Args()[1]
			if idx.Kind() != ast.LiteralKind {
				return nil
			}
			s, ok := idx.AsLiteral().(types.String)
			if !ok {
				return nil
			}
			keys = append(keys, string(s))
			e = call.Args()[0]
			continue
		case ast.IdentKind:
			name := e.AsIdent()
			if (name != varInput && name != varMetadata) || len(keys) == 0 {
				return nil
			}
			// keys were collected from the outside in.
			for i, j := 0, len(keys)-1; i < j; i, j = i+1, j-1 {
				keys[i], keys[j] = keys[j], keys[i]
			}
			c := &chain{meta: name == varMetadata, keys: keys, paths: make([]string, len(keys))}
			path := name
			for i, k := range keys {
				if isIdent(k) {
					path += "." + k
				} else {
					path += "[" + strconv.Quote(k) + "]"
				}
				c.paths[i] = path
			}
			return c
		default:
			return nil
		}
	}
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// walk follows the chain from root. On failure it returns the index of the
// step that failed.
func (c *chain) walk(root map[string]any) (val any, step int, res walkResult) {
	m := root
	last := len(c.keys) - 1
	for i, k := range c.keys {
		v, ok := m[k]
		if !ok {
			return nil, i, walkMissing
		}
		if i == last {
			return v, i, walkOK
		}
		switch t := v.(type) {
		case map[string]any:
			m = t
		case string, float64, bool, nil:
			return nil, i + 1, walkMissing
		case []any:
			return nil, i + 1, walkInList
		default:
			return nil, i + 1, walkUnknown
		}
	}
	return nil, 0, walkUnknown // unreachable: a chain has at least one key
}

// celTypeName names the CEL type of a value decoded by encoding/json, as
// CEL's own TypeName would; ok is false for any other Go type.
func celTypeName(v any) (name string, ok bool) {
	switch v.(type) {
	case string:
		return "string", true
	case float64:
		return "double", true
	case bool:
		return "bool", true
	case nil:
		return "null_type", true
	case map[string]any:
		return "map", true
	case []any:
		return "list", true
	}
	return "", false
}

// fastKey derives the key of a chain expression. handled is false when the
// input holds a value whose CEL behaviour is not reproduced here; the caller
// must then evaluate with CEL.
func (e *Expression) fastKey(input, meta map[string]any) (key string, handled bool, err error) {
	c := e.fast
	root := input
	if c.meta {
		root = meta
	}
	v, step, res := c.walk(root)
	switch res {
	case walkOK:
		if s, ok := v.(string); ok {
			key, err := e.accept(s)
			return key, true, err
		}
		name, ok := celTypeName(v)
		if !ok {
			return "", false, nil
		}
		return "", true, &Error{Kind: ErrNotString, Expr: e.src, Type: name}
	case walkMissing, walkInList:
		return "", true, e.chainError(step, res)
	}
	return "", false, nil
}

// chainError is CEL's error for a chain that failed at step with res,
// walkMissing or walkInList.
func (e *Expression) chainError(step int, res walkResult) error {
	c := e.fast
	if res == walkInList {
		return &Error{Kind: ErrEval, Expr: e.src, Field: c.paths[step], Message: msgInList}
	}
	return &Error{Kind: ErrEval, Expr: e.src, Field: c.paths[step], Message: msgNoSuchKey + c.keys[step]}
}
