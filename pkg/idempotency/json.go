package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/taskq/taskq/internal/jsondepth"
)

// decodeObject decodes data, which must be a JSON object, for the variable
// named what. Empty data is an empty object: a run without input or metadata
// is common and must still get a key from expressions that ignore them.
func decodeObject(what string, data []byte, maxDepth int) (map[string]any, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, nil
	}
	if trimmed[0] != '{' {
		return nil, &Error{Kind: ErrInput, Message: fmt.Sprintf("%s must be a JSON object, got %s", what, jsonKind(trimmed[0]))}
	}
	// encoding/json recurses once per level; checking the depth first keeps
	// hostile payloads from costing more than a linear scan.
	if jsondepth.Exceeds(trimmed, maxDepth) {
		return nil, &Error{Kind: ErrInput, Message: fmt.Sprintf("%s nests deeper than the limit of %d levels", what, maxDepth)}
	}
	var m map[string]any
	if err := json.Unmarshal(trimmed, &m); err != nil {
		return nil, &Error{Kind: ErrInput, Message: fmt.Sprintf("%s is not valid JSON: %v", what, err)}
	}
	return m, nil
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "invalid JSON"
}
