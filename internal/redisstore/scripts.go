package redisstore

import (
	"embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFS embed.FS

// The modules of lua/lib/, in the order they go before a script: each may
// call those before it.
var luaModules = []string{
	"errors",  // error replies
	"record",  // a run record's status and flags
	"stream",  // a task stream's deliveries
	"ending",  // ending runs
	"signals", // appending a signal
	"claim",   // claiming an idempotency key for a new run
}

// script is one Lua script of lua/, as the store sends it: assembled from
// the layout (lua/layout_gen.lua), the modules it calls (lua/lib/) and its
// own file, see assembleScript. Each script is loaded once, in the Go file
// of its name (enqueue.go holds enqueueScript); they are immutable.
type script struct {
	name string
	src  string // the source sent, see ScriptSource
	*redis.Script
	// plain is the script without its shebang line, for servers that
	// cannot compile one (Redis before 7.0, miniredis); nil for a script
	// that has none.
	plain *redis.Script
}

// allScripts lists every script the store runs.
var allScripts = []*script{
	enqueueScript, startScript, finishScript, cancelScript, heartbeatScript, promoteScript, requeueScript,
	sweepScript, releaseScript, registerScript, signalScript, pushEventScript, saveStepScript, watchScript,
	ensureGroupScript,
}

// loadScript loads lua/<name>.lua with the modules it calls.
func loadScript(name string, modules ...string) *script {
	src, plain, err := assembleScript(name, modules)
	if err != nil {
		panic(err) // embedded at build time: the tests load every script
	}
	sc := &script{name: name, src: src, Script: redis.NewScript(src)}
	if plain != "" {
		sc.plain = redis.NewScript(plain)
	}
	return sc
}

// assembleScript returns the source of script name as Redis runs it: the
// layout's shared part and the script's own section, the modules (in the
// order of luaModules), the script's file; with the layout folded in (see
// foldLayout). A script file may start with a shebang
// line declaring flags (Redis 7): "#!lua flags=allow-oom" lets the scripts
// that end or advance runs already accepted keep running when Redis is at
// maxmemory, so that workers drain the queue and free memory while new
// triggers are refused (see docs/operations.md). The shebang must open the
// source Redis compiles, so it goes first; plain is the source without it
// ("" for a script that has none).
func assembleScript(name string, modules []string) (src, plain string, err error) {
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return "", "", err
	}
	gen, err := luaFS.ReadFile("lua/layout_gen.lua")
	if err != nil {
		return "", "", err
	}
	shared, section, err := layoutParts(string(gen), name)
	if err != nil {
		return "", "", err
	}
	var parts []string
	for _, m := range luaModules {
		if !slices.Contains(modules, m) {
			continue
		}
		lib, err := luaFS.ReadFile("lua/lib/" + m + ".lua")
		if err != nil {
			return "", "", err
		}
		parts = append(parts, string(lib))
	}
	for _, m := range modules {
		if !slices.Contains(luaModules, m) {
			return "", "", fmt.Errorf("script %s: no module %q in lua/lib", name, m)
		}
	}
	shebang, rest := "", string(body)
	if first, after, ok := strings.Cut(rest, "\n"); ok && strings.HasPrefix(first, "#!") {
		shebang, rest = first, after
	}
	plain, err = foldLayout(shared+"\n"+section, strings.Join(append(parts, rest), "\n"))
	if err != nil {
		return "", "", fmt.Errorf("script %s: %w", name, err)
	}
	if shebang == "" {
		return plain, "", nil
	}
	return shebang + "\n" + plain, plain, nil
}

// layoutSection opens the section of one script's own constants in the
// generated layout (layoutgen.SectionPrefix).
const layoutSection = "-- @script "

// layoutParts cuts the generated layout into its shared part and the
// section of script name (empty when the script has none).
func layoutParts(gen, name string) (shared, section string, err error) {
	shared, sections, _ := strings.Cut(gen, "\n"+layoutSection)
	if sections == "" {
		return shared, "", nil
	}
	for _, s := range strings.Split(sections, "\n"+layoutSection) {
		n, text, _ := strings.Cut(s, "\n")
		if n == name {
			return shared, text, nil
		}
	}
	return shared, "", nil
}

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

// shebangUnsupported reports whether err says the server could not compile
// a script's shebang line: Redis before 7.0 and miniredis read it as Lua.
func shebangUnsupported(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "Error compiling script") && strings.Contains(msg, "'#'")
}

// isNoScript reports whether err says the script cache lacks a script, as it
// does after Redis restarts.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
