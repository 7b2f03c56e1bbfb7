// Package jsondepth bounds the nesting of JSON before anything parses it:
// package idempotency applies it to the input and metadata it evaluates,
// and the trigger paths that accept JSON without deriving a key from it
// apply the same bound.
package jsondepth

// Exceeds reports whether the objects and arrays in data nest more than
// limit levels deep. Brackets inside strings do not count. It does not
// validate: malformed JSON is left for the decoder to reject.
func Exceeds(data []byte, limit int) bool {
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
