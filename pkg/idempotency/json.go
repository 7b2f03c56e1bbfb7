package idempotency

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	if depthExceeds(trimmed, maxDepth) {
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

// depthExceeds reports whether the objects and arrays in data nest more than
// limit levels deep. Brackets inside strings do not count. It does not
// validate: malformed JSON is left for the decoder to reject.
func depthExceeds(data []byte, limit int) bool {
	depth := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '"':
			// Skip to the closing quote, stepping over escapes.
			for i++; i < len(data); i++ {
				if data[i] == '\\' {
					i++
				} else if data[i] == '"' {
					break
				}
			}
		case '{', '[':
			depth++
			if depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}
