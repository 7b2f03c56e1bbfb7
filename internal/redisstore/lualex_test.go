package redisstore

import (
	"fmt"
	"strings"
)

// luaTokenKind says what a token of Lua source is.
type luaTokenKind int

const (
	luaSpace   luaTokenKind = iota // white space, newlines included
	luaComment                     // -- to the end of the line, or --[[ ... ]]
	luaName                        // a name or a keyword
	luaNumber
	luaString // a quoted or long string, quotes included
	luaOther  // an operator or punctuation
)

// luaToken is one token of Lua source; the tokens of a source, joined,
// give it back unchanged.
type luaToken struct {
	kind luaTokenKind
	text string
	line int // 1-based line of its first character
}

// luaTokens splits Lua 5.1 source into tokens, enough of Lua to tell names
// from strings, comments and numbers: the scripts are assembled and checked
// with it, and Redis compiles them.
func luaTokens(src string) ([]luaToken, error) {
	var out []luaToken
	line := 1
	for i := 0; i < len(src); {
		start, kind := i, luaOther
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			kind = luaSpace
			for i < len(src) && strings.IndexByte(" \t\n\r", src[i]) >= 0 {
				i++
			}
		case strings.HasPrefix(src[i:], "--"):
			kind = luaComment
			if n, ok := longBracket(src[i+2:]); ok {
				i += 2 + n
			} else if end := strings.IndexByte(src[i:], '\n'); end >= 0 {
				i += end
			} else {
				i = len(src)
			}
			if i > len(src) {
				return nil, fmt.Errorf("line %d: unfinished long comment", line)
			}
		case c == '\'' || c == '"':
			kind = luaString
			i++
			for i < len(src) && src[i] != c {
				switch src[i] {
				case '\\':
					i++
				case '\n':
					return nil, fmt.Errorf("line %d: unfinished string", line)
				}
				i++
			}
			if i >= len(src) {
				return nil, fmt.Errorf("line %d: unfinished string", line)
			}
			i++
		case c == '[' && (strings.HasPrefix(src[i:], "[[") || strings.HasPrefix(src[i:], "[=")):
			n, ok := longBracket(src[i:])
			if !ok {
				i++ // a "[" followed by "=" that opens no long string
				break
			}
			if i+n > len(src) {
				return nil, fmt.Errorf("line %d: unfinished long string", line)
			}
			kind = luaString
			i += n
		case isNameStart(c):
			kind = luaName
			for i < len(src) && (isNameStart(src[i]) || isDigit(src[i])) {
				i++
			}
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			kind = luaNumber
			for i < len(src) {
				d := src[i]
				if isDigit(d) || isNameStart(d) || d == '.' {
					i++
				} else if (d == '+' || d == '-') && (src[i-1] == 'e' || src[i-1] == 'E') &&
					!strings.HasPrefix(strings.ToLower(src[start:]), "0x") {
					i++
				} else {
					break
				}
			}
		default:
			i++
			for _, op := range []string{"...", "..", "==", "~=", "<=", ">="} {
				if strings.HasPrefix(src[start:], op) {
					i = start + len(op)
					break
				}
			}
		}
		out = append(out, luaToken{kind: kind, text: src[start:i], line: line})
		line += strings.Count(src[start:i], "\n")
	}
	return out, nil
}

// longBracket returns the length of the long bracket ([[ ... ]], [==[ ...
// ]==]) that s opens, past its end when it is unfinished; ok is false when
// s opens none.
func longBracket(s string) (n int, ok bool) {
	if len(s) < 2 || s[0] != '[' {
		return 0, false
	}
	level := 1
	for level < len(s) && s[level] == '=' {
		level++
	}
	if level >= len(s) || s[level] != '[' {
		return 0, false
	}
	closing := "]" + strings.Repeat("=", level-1) + "]"
	end := strings.Index(s[level+1:], closing)
	if end < 0 {
		return len(s) + 1, true
	}
	return level + 1 + end + len(closing), true
}

func isNameStart(c byte) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
