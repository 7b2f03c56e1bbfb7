package httpapi

import (
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Request text must be valid Unicode. encoding/json replaces an invalid
// UTF-8 byte, and a \u escape of a lone UTF-16 surrogate ("\ud800"), with
// U+FFFD: "\xff", "\xfe", "\ud800" and "\ufffd" would all reach a task's
// expression as the same string and derive the same idempotency key, and
// the raw bytes would be stored as sent. So both are refused before
// decoding, with the byte offset of the first one.

// invalidUTF8 returns the offset of the first byte of b that does not
// begin a valid UTF-8 sequence, or -1.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// invalidUTF8String is invalidUTF8 of a string.
func invalidUTF8String(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return -1
}

// loneSurrogate returns the offset of the first \u escape in a JSON string
// of data that encodes half of a UTF-16 surrogate pair without the other
// half, or -1. data need not be valid JSON: outside strings nothing is
// looked at, and a string left open ends the scan.
func loneSurrogate(data []byte) int {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			if i+1 >= len(data) {
				return -1
			}
			if data[i+1] != 'u' {
				i++ // a one-character escape such as \" or \\
				continue
			}
			r, ok := hex4(data, i+2)
			if !ok {
				i++ // malformed: the decoder will say so
				continue
			}
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return i // a low half first
			case r >= 0xD800 && r <= 0xDBFF:
				if i+11 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
					if lo, ok := hex4(data, i+8); ok && lo >= 0xDC00 && lo <= 0xDFFF {
						i += 11 // a pair: one character
						continue
					}
				}
				return i
			}
			i += 5
		}
	}
	return -1
}

// hex4 reads four hex digits of data at i.
func hex4(data []byte, i int) (rune, bool) {
	if i+4 > len(data) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(data[i:i+4]), 16, 16)
	return rune(n), err == nil
}

// checkBodyText refuses a body with invalid UTF-8 or a lone surrogate
// escape, naming the offset.
func checkBodyText(data []byte) *apiError {
	if at := invalidUTF8(data); at >= 0 {
		e := newError(http.StatusBadRequest, CodeMalformedJSON,
			"request body is not valid UTF-8: byte 0x%02x at offset %d does not begin a UTF-8 character", data[at], at)
		e.Offset = &at
		return e
	}
	if at := loneSurrogate(data); at >= 0 {
		e := newError(http.StatusBadRequest, CodeMalformedJSON,
			"request body has %s at offset %d, half of a UTF-16 surrogate pair without the other half: it encodes no character",
			data[at:at+6], at)
		e.Offset = &at
		return e
	}
	return nil
}

// checkURLText refuses a path that decodes to invalid UTF-8 (%FF in a
// key, say), naming the offset in the decoded path. Query values are the
// handlers' to check (wait, the only one, must be a duration).
func checkURLText(r *http.Request) *apiError {
	if at := invalidUTF8String(r.URL.Path); at >= 0 {
		e := newError(http.StatusBadRequest, CodeInvalidParameter,
			"the request path is not valid UTF-8 once percent-decoded: byte 0x%02x at offset %d", r.URL.Path[at], at)
		e.Offset = &at
		return e
	}
	return nil
}
