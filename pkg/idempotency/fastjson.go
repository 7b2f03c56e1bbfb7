package idempotency

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/taskq/taskq/internal/jsondepth"
)

// For a chain expression, Key reads the selected value straight out of
// the JSON instead of decoding input and metadata into maps first, which
// costs a dozen allocations per trigger. The answer is the one decoding
// and then Key would give. Wherever that is not certain (a key or string
// with escapes or invalid UTF-8, a number encoding/json might refuse, JSON
// that is not a well-formed object within the depth limit) the lookup
// reports false and the caller decodes after all.

// fastKeyJSON derives the key of a chain expression from raw JSON. handled
// is false when the caller must decode and call Key instead.
func (e *Expression) fastKeyJSON(input, meta []byte) (key string, handled bool, err error) {
	in, ok := plainObject(input, e.maxDepth)
	if !ok {
		return "", false, nil
	}
	md, ok := plainObject(meta, e.maxDepth)
	if !ok {
		return "", false, nil
	}
	c := e.fast
	obj := in
	if c.meta {
		obj = md
	}
	last := len(c.keys) - 1
	for i, k := range c.keys {
		v, found, ok := lookupJSON(obj, k)
		switch {
		case !ok:
			return "", false, nil
		case !found:
			return "", true, e.chainError(i, walkMissing)
		case i == last:
			return e.jsonResult(v)
		}
		switch v[0] {
		case '{':
			obj = v
		case '[':
			return "", true, e.chainError(i+1, walkInList)
		default:
			return "", true, e.chainError(i+1, walkMissing)
		}
	}
	return "", false, nil // unreachable: a chain has at least one key
}

// jsonResult is what Key makes of v, the JSON value the chain selects.
func (e *Expression) jsonResult(v []byte) (string, bool, error) {
	var name string
	switch v[0] {
	case '"':
		s, ok := plainString(v)
		if !ok {
			if s, ok = decodeString(v); !ok {
				return "", false, nil
			}
		}
		key, err := e.accept(s)
		return key, true, err
	case '{':
		name = "map"
	case '[':
		name = "list"
	case 't', 'f':
		name = "bool"
	case 'n':
		name = "null_type"
	default:
		name = "double"
	}
	return "", true, &Error{Kind: ErrNotString, Expr: e.src, Type: name}
}

// plainObject returns data without leading whitespace when it is a JSON
// object that decodeObject would decode without error, nil for empty data
// (an empty object). ok is false otherwise, or when that is not certain.
func plainObject(data []byte, maxDepth int) (obj []byte, ok bool) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	switch {
	case len(trimmed) == 0:
		return nil, true
	case trimmed[0] != '{':
		return nil, false
	case len(trimmed) == 2 && trimmed[1] == '}':
		return trimmed, true
	}
	if jsondepth.Exceeds(trimmed, maxDepth) || !json.Valid(trimmed) || !numbersFit(trimmed) {
		return nil, false
	}
	return trimmed, true
}

// numbersFit reports whether every number in the well-formed JSON data
// fits a float64, as decoding into an interface requires. Numbers of up to
// 15 characters without an exponent always do.
func numbersFit(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			i = stringEnd(data, i) - 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := numberEnd(data, i)
			tok := data[i:j]
			if len(tok) > 15 || bytes.ContainsAny(tok, "eE") {
				if _, err := strconv.ParseFloat(string(tok), 64); err != nil {
					return false
				}
			}
			i = j - 1
		}
	}
	return true
}

// lookupJSON finds key in obj, a well-formed JSON object (nil for an empty
// one), and returns its value; for a repeated key the last, as decoding
// into a map keeps. ok is false when a key is escaped or not valid UTF-8:
// it might decode to key.
func lookupJSON(obj []byte, key string) (val []byte, found, ok bool) {
	if obj == nil {
		return nil, false, true
	}
	i := skipSpace(obj, 1)
	if obj[i] == '}' {
		return nil, false, true
	}
	for {
		end := stringEnd(obj, i)
		k := obj[i+1 : end-1]
		if !plainBytes(k) {
			return nil, false, false
		}
		i = skipSpace(obj, skipSpace(obj, end)+1) // past the colon
		vend := valueEnd(obj, i)
		if string(k) == key {
			val, found = obj[i:vend], true
		}
		i = skipSpace(obj, vend)
		if obj[i] == '}' {
			return val, found, true
		}
		i = skipSpace(obj, i+1) // past the comma
	}
}

// plainString returns the content of the JSON string s (quotes included)
// when it decodes to its own bytes: no escapes, valid UTF-8.
func plainString(s []byte) (string, bool) {
	body := s[1 : len(s)-1]
	if !plainBytes(body) {
		return "", false
	}
	return string(body), true
}

// decodeString decodes the JSON string s as encoding/json does.
func decodeString(s []byte) (string, bool) {
	var out string
	err := json.Unmarshal(s, &out)
	return out, err == nil
}

func plainBytes(b []byte) bool {
	return bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd returns the index just past the string starting at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}

// numberEnd returns the index just past the number starting at data[i].
func numberEnd(data []byte, i int) int {
	for ; i < len(data); i++ {
		switch c := data[i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
		default:
			return i
		}
	}
	return i
}

// valueEnd returns the index just past the well-formed value starting at
// data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	case 't', 'n':
		return i + 4
	case 'f':
		return i + 5
	}
	return numberEnd(data, i)
}
