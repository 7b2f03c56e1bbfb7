package redisstore

import (
	"fmt"
	"regexp"
	"strings"
)

// A constant of the generated layout: local NAME = 'string' or integer.
var layoutConst = regexp.MustCompile(`^local ([A-Z][A-Z0-9_]*) = ('(?:[^'\\]|\\.)*'|-?[0-9]+)(?: --.*)?$`)

// A function of the generated layout, which returns one expression of its
// parameters: its three lines.
var (
	layoutFunc   = regexp.MustCompile(`^local function (taskq_[a-z0-9_]+)\(([a-z0-9_, ]*)\)$`)
	layoutReturn = regexp.MustCompile(`^  return (.+)$`)
)

// layoutInline is a function of the layout, to be inlined where called.
type layoutInline struct {
	params []string
	body   []luaToken
}

// foldLayout returns layout followed by code, with the layout's constants
// and functions folded in: every use of a constant is replaced by its
// value, every call of a function by the expression it returns (its
// arguments in place of its parameters), and their declarations are
// dropped.
//
// Lua 5.1, which Redis runs, has no constants, nor inline functions. A
// script's top-level locals and functions are made anew on every call of
// the script, and a local that one of its functions uses is an upvalue
// bound anew on every call too: written as locals and functions, the
// layout cost Redis 0.5-4% more instructions per run (make script-cost).
// Folded, a script is the one that would have been written with literals
// and joined keys, while the layout is declared in one place.
func foldLayout(layout, code string) (string, error) {
	consts := map[string]string{}
	funcs := map[string]layoutInline{}
	lines := strings.Split(layout, "\n")
	var kept []string
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := layoutConst.FindStringSubmatch(l); m != nil {
			consts[m[1]] = m[2]
			continue
		}
		if m := layoutFunc.FindStringSubmatch(l); m != nil && i+2 < len(lines) && lines[i+2] == "end" {
			r := layoutReturn.FindStringSubmatch(lines[i+1])
			if r == nil {
				return "", fmt.Errorf("layout function %s returns no one expression", m[1])
			}
			f, err := newLayoutInline(m[2], r[1])
			if err != nil {
				return "", fmt.Errorf("layout function %s: %w", m[1], err)
			}
			funcs[m[1]] = f
			i += 2
			continue
		}
		if strings.HasPrefix(l, "local ") {
			return "", fmt.Errorf("layout line %q is neither a constant nor a function the store can fold", l)
		}
		kept = append(kept, l)
	}
	toks, err := luaTokens(strings.Join(kept, "\n") + "\n" + code)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := fold(&b, toks, consts, funcs, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

func newLayoutInline(params, body string) (layoutInline, error) {
	f := layoutInline{}
	for _, p := range strings.Split(params, ",") {
		if p = strings.TrimSpace(p); p != "" {
			f.params = append(f.params, p)
		}
	}
	toks, err := luaTokens(body)
	if err != nil {
		return f, err
	}
	f.body = toks
	for _, p := range f.params {
		n := 0
		for _, t := range toks {
			if t.kind == luaName && t.text == p {
				n++
			}
		}
		if n > 1 {
			// Inlined, the argument would be evaluated as many times.
			return f, fmt.Errorf("parameter %s is used %d times", p, n)
		}
	}
	return f, nil
}

// fold writes toks to b with the layout's constants and functions folded
// in, and the names of args replaced by their (folded) text.
func fold(b *strings.Builder, toks []luaToken, consts map[string]string, funcs map[string]layoutInline, args map[string]string) error {
	prev := luaToken{}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		// A name after "." or ":", or before "=" (a table constructor's
		// field), names a field.
		field := prev.text == "." || prev.text == ":" || nextSignificant(toks, i+1) == "="
		if t.kind != luaSpace && t.kind != luaComment {
			prev = t
		}
		if t.kind != luaName || field {
			b.WriteString(t.text)
			continue
		}
		if v, ok := args[t.text]; ok {
			b.WriteString(v)
			continue
		}
		if v, ok := consts[t.text]; ok {
			b.WriteString(v)
			continue
		}
		f, ok := funcs[t.text]
		if !ok {
			b.WriteString(t.text)
			continue
		}
		callArgs, end, err := callArguments(toks, i+1)
		if err != nil {
			return fmt.Errorf("line %d: %s: %w", t.line, t.text, err)
		}
		if len(callArgs) != len(f.params) {
			return fmt.Errorf("line %d: %s takes %d arguments, not %d", t.line, t.text, len(f.params), len(callArgs))
		}
		bound := make(map[string]string, len(f.params))
		for j, a := range callArgs {
			var ab strings.Builder
			if err := fold(&ab, a, consts, funcs, nil); err != nil {
				return err
			}
			text := strings.TrimSpace(ab.String())
			if significant(a) > 1 {
				text = "(" + text + ")"
			}
			bound[f.params[j]] = text
		}
		b.WriteString("(")
		if err := fold(b, f.body, consts, funcs, bound); err != nil {
			return err
		}
		b.WriteString(")")
		i = end
		prev = luaToken{kind: luaOther, text: ")"}
	}
	return nil
}

// callArguments reads the arguments of a call whose "(" is the next
// significant token from toks[from] on: the tokens of each argument, and
// the index of the closing ")".
func callArguments(toks []luaToken, from int) (args [][]luaToken, end int, err error) {
	i := from
	for i < len(toks) && toks[i].kind == luaSpace {
		i++
	}
	if i >= len(toks) || toks[i].text != "(" {
		return nil, 0, fmt.Errorf("is not called: a layout function can only be called, to be inlined")
	}
	depth, cur := 0, []luaToken{}
	for i++; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == luaOther && (t.text == "(" || t.text == "[" || t.text == "{"):
			depth++
		case t.kind == luaOther && (t.text == ")" || t.text == "]" || t.text == "}"):
			if depth == 0 {
				if significant(cur) > 0 || len(args) > 0 {
					args = append(args, cur)
				}
				return args, i, nil
			}
			depth--
		case t.kind == luaOther && t.text == "," && depth == 0:
			args, cur = append(args, cur), []luaToken{}
			continue
		}
		cur = append(cur, t)
	}
	return nil, 0, fmt.Errorf("unfinished call")
}

// nextSignificant is the text of the first token from toks[from] on that
// is neither space nor comment.
func nextSignificant(toks []luaToken, from int) string {
	for _, t := range toks[min(from, len(toks)):] {
		if t.kind != luaSpace && t.kind != luaComment {
			return t.text
		}
	}
	return ""
}

// significant counts the tokens of toks that are neither space nor
// comment.
func significant(toks []luaToken) int {
	n := 0
	for _, t := range toks {
		if t.kind != luaSpace && t.kind != luaComment {
			n++
		}
	}
	return n
}
