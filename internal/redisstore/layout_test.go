package redisstore

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redisstore/internal/layoutgen"
)

// declaredLayout is the layout as layout.go declares it.
type declaredLayout struct {
	shared    map[string]bool             // Lua names every script sees
	scripts   map[string]map[string]int64 // script -> its Lua constants
	fields    map[string]bool             // field names of records and stream entries
	entry     map[string]bool             // field names of stream entries
	keyParts  map[string]bool             // key parts ("run:", "retry", ...)
	goLiteral map[string]bool             // what no Go file but layout.go may spell out
}

func readLayout(t *testing.T) declaredLayout {
	t.Helper()
	src, err := os.ReadFile("layout.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := layoutgen.Parse("layout.go", src)
	if err != nil {
		t.Fatal(err)
	}
	d := declaredLayout{shared: map[string]bool{}, scripts: map[string]map[string]int64{}, fields: map[string]bool{},
		entry: map[string]bool{}, keyParts: map[string]bool{}, goLiteral: map[string]bool{}}
	for _, b := range blocks {
		for _, c := range b.Consts {
			switch b.Kind {
			case "const":
				d.shared[layoutgen.UpperSnake(c.GoName)] = true
				if v, ok := c.Value.(string); ok {
					d.fields[v] = true
					if strings.HasPrefix(c.GoName, "entry") || strings.HasPrefix(c.GoName, "signalEntry") {
						d.entry[v] = true
					}
				}
			case "keys":
				d.shared["taskq_key_"+strings.ToLower(layoutgen.UpperSnake(strings.TrimPrefix(c.GoName, "key")))] = true
				d.keyParts[c.Value.(string)] = true
			case "spec":
				d.shared["taskq_spec"] = true
				if !strings.HasSuffix(c.GoName, "Count") {
					d.shared["SPEC_"+layoutgen.UpperSnake(strings.TrimPrefix(c.GoName, "spec"))] = true
				}
			case "script":
				m := d.scripts[b.Script]
				if m == nil {
					m = map[string]int64{}
					d.scripts[b.Script] = m
				}
				name := layoutgen.UpperSnake(c.GoName[len(luaPrefix(b.Script)):])
				m[name] = c.Value.(int64)
			}
		}
	}
	// The keys only Go builds are key parts too (an unmarked block).
	for _, p := range []string{keyRuns, keyTasks, keyEvent, keyEvents, keyEventKeyIndex, keyFanouts, keyEventTrigger, keyAckMark} {
		d.keyParts[p] = true
	}
	for p := range d.keyParts {
		if strings.HasSuffix(p, ":") {
			d.goLiteral[p] = true
		}
	}
	return d
}

// luaPrefix is the Go prefix of a script's layout constants.
func luaPrefix(script string) string {
	parts := strings.Split(script, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// (a) The generated prelude is what layoutgen makes of layout.go now.
func TestLayoutPreludeIsGenerated(t *testing.T) {
	src, err := os.ReadFile("layout.go")
	if err != nil {
		t.Fatal(err)
	}
	want, err := layoutgen.Generate("layout.go", src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := luaFS.ReadFile("lua/layout_gen.lua")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("lua/layout_gen.lua is stale: run go generate in internal/redisstore")
	}
	if layoutSection != layoutgen.SectionPrefix {
		t.Errorf("the store cuts the layout at %q, layoutgen writes %q", layoutSection, layoutgen.SectionPrefix)
	}
}

// Every script file has a script the store loads, of the same name, with a
// Go file of the same name beside it; every module of lua/lib is in
// luaModules.
func TestEveryScriptIsLoadedAndHasItsGoFile(t *testing.T) {
	loaded := map[string]bool{}
	for _, sc := range allScripts {
		loaded[sc.name] = true
	}
	files, _ := fs.Glob(luaFS, "lua/*.lua")
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".lua")
		if name == "layout_gen" {
			continue
		}
		if !loaded[name] {
			t.Errorf("%s is not in allScripts", f)
		}
		delete(loaded, name)
		if _, err := os.Stat(name + ".go"); err != nil {
			t.Errorf("%s has no Go file %s.go", f, name)
		}
	}
	for name := range loaded {
		t.Errorf("script %s has no file lua/%s.lua", name, name)
	}
	mods, _ := fs.Glob(luaFS, "lua/lib/*.lua")
	for _, f := range mods {
		if name := strings.TrimSuffix(path.Base(f), ".lua"); !slices.Contains(luaModules, name) {
			t.Errorf("%s is not in luaModules", f)
		}
	}
}

var (
	luaConstName = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	headerIndex  = regexp.MustCompile(`^--\s+(KEYS|ARGV)\[(\d+)\]\s+([A-Z][A-Z0-9_]*)\b`)
	headerItem   = regexp.MustCompile(`^--\s+\+(\d+)\s+([A-Z][A-Z0-9_]*)\b`)
	headerCount  = regexp.MustCompile(`\b([A-Z][A-Z0-9_]*_COUNT) \((\d+)\)`)
)

// scriptHeader returns the constants a script's header comment names, with
// the value it gives each.
func scriptHeader(src string) (map[string]int64, []string) {
	got := map[string]int64{}
	var problems []string
	put := func(name, v string) {
		n, _ := strconv.ParseInt(v, 10, 64)
		if old, ok := got[name]; ok && old != n {
			problems = append(problems, fmt.Sprintf("%s is %d and %d", name, old, n))
		}
		got[name] = n
	}
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "#!") {
			continue
		}
		if !strings.HasPrefix(l, "--") {
			break // the header ends with the first line of code
		}
		if m := headerIndex.FindStringSubmatch(l); m != nil {
			if want := map[string]string{"KEYS": "KEY_", "ARGV": "ARG_"}[m[1]]; !strings.HasPrefix(m[3], want) {
				problems = append(problems, fmt.Sprintf("%s[%s] is named %s, not %s...", m[1], m[2], m[3], want))
			}
			put(m[3], m[2])
		}
		if m := headerItem.FindStringSubmatch(l); m != nil {
			if !strings.HasPrefix(m[2], "ITEM_") {
				problems = append(problems, fmt.Sprintf("+%s is named %s, not ITEM_...", m[1], m[2]))
			}
			put(m[2], m[1])
		}
		for _, m := range headerCount.FindAllStringSubmatch(l, -1) {
			put(m[1], m[2])
		}
	}
	return got, problems
}

// (b) Each script's header names every constant of its KEYS and ARGV with
// the value layout.go declares, and no other.
func TestScriptHeadersFollowTheLayout(t *testing.T) {
	d := readLayout(t)
	for _, sc := range allScripts {
		src, err := luaFS.ReadFile("lua/" + sc.name + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		got, problems := scriptHeader(string(src))
		for _, p := range problems {
			t.Errorf("%s.lua header: %s", sc.name, p)
		}
		want := d.scripts[sc.name]
		if len(want) == 0 {
			t.Errorf("layout.go declares no KEYS and ARGV for %s.lua", sc.name)
		}
		for name, v := range want {
			if g, ok := got[name]; !ok {
				t.Errorf("%s.lua header does not name %s (%d)", sc.name, name, v)
			} else if g != v {
				t.Errorf("%s.lua header says %s is %d, layout.go %d", sc.name, name, g, v)
			}
		}
		for name, v := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("%s.lua header names %s (%d), which layout.go does not declare for it", sc.name, name, v)
			}
		}
	}
}

// The header check catches a header that disagrees with the declaration.
func TestScriptHeaderCheckSeesDisagreement(t *testing.T) {
	src := "-- ARGV: ARG_COUNT (2)\n--   ARGV[1] ARG_PREFIX\n--   ARGV[3] ARG_GROUP x\n--   +0 ITEM_ARG_RUN_ID\n--   +1 KEY_X\nlocal x\n-- ARGV[9] ARG_LATE\n"
	got, problems := scriptHeader(src)
	want := map[string]int64{"ARG_COUNT": 2, "ARG_PREFIX": 1, "ARG_GROUP": 3, "ITEM_ARG_RUN_ID": 0, "KEY_X": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("header read as %v, want %v", got, want)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "KEY_X") {
		t.Errorf("problems = %q, want the item named KEY_X", problems)
	}
}

// luaFiles returns the hand-written Lua files: scripts and modules.
func luaFiles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, pattern := range []string{"lua/*.lua", "lua/lib/*.lua"} {
		files, _ := fs.Glob(luaFS, pattern)
		for _, f := range files {
			if f == "lua/layout_gen.lua" {
				continue
			}
			b, err := luaFS.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			out[f] = string(b)
		}
	}
	return out
}

// layoutViolations lists where src, the Lua file name, spells out what
// the layout declares: a field name, a hand-joined key, an ARGV or KEYS
// index written as a number, a constant it does not see.
func layoutViolations(d declaredLayout, name, src string) []string {
	script := ""
	if path.Dir(name) == "lua" {
		script = strings.TrimSuffix(path.Base(name), ".lua")
	}
	if first, rest, ok := strings.Cut(src, "\n"); ok && strings.HasPrefix(first, "#!") {
		src = "\n" + rest
	}
	toks, err := luaTokens(src)
	if err != nil {
		return []string{err.Error()}
	}
	var sig []luaToken
	for _, t := range toks {
		if t.kind != luaSpace && t.kind != luaComment {
			sig = append(sig, t)
		}
	}
	var out []string
	bad := func(t luaToken, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s:%d: %s", name, t.line, fmt.Sprintf(format, args...)))
	}
	own := d.scripts[script]
	at := func(i int) string {
		if i < 0 || i >= len(sig) {
			return ""
		}
		return sig[i].text
	}
	var brackets []string // open brackets, innermost last
	subscript := -1       // index in brackets of an ARGV[ or KEYS[ being read
	subscriptNamed := false
	lineOfCount := -1 // a line that reads #KEYS or #ARGV
	for i, t := range sig {
		switch t.kind {
		case luaString:
			v, err := strconv.Unquote(`"` + strings.ReplaceAll(t.text[1:len(t.text)-1], `"`, `\"`) + `"`)
			if err != nil || t.text[0] == '[' {
				v = t.text
			}
			joined := at(i-1) == ".." || at(i+1) == ".."
			switch {
			case d.keyParts[v] && (strings.HasSuffix(v, ":") || joined), strings.HasPrefix(v, "taskq:"):
				bad(t, "key part %s joined by hand: use the layout's taskq_key_* builder", t.text)
			case d.entry[v]:
				bad(t, "stream entry field %s spelled out: use its layout constant", t.text)
			case d.fields[v] && len(brackets) > 0 && brackets[len(brackets)-1] == "(" &&
				(at(i-1) == "(" || at(i-1) == ",") && (at(i+1) == ")" || at(i+1) == ","):
				bad(t, "field name %s spelled out in a call: use its layout constant", t.text)
			}
		case luaNumber:
			if t.text != "0" && t.text != "1" && (subscript >= 0 || t.line == lineOfCount) {
				bad(t, "ARGV or KEYS position %s written as a number: use the script's layout constants", t.text)
			}
		case luaName:
			field := at(i-1) == "." || at(i-1) == ":"
			switch {
			case field:
			case t.text == "ARGV" || t.text == "KEYS":
				if script == "" {
					bad(t, "%s read in a module: scripts pass what modules need", t.text)
				}
				if at(i-1) == "#" {
					lineOfCount = t.line
				}
				if at(i+1) == "[" && subscript < 0 {
					subscript, subscriptNamed = len(brackets), false
				}
			case luaConstName.MatchString(t.text):
				_, mine := own[t.text]
				if !mine && !d.shared[t.text] {
					bad(t, "%s is no layout constant %s sees", t.text, name)
				}
				if mine && subscript >= 0 {
					subscriptNamed = true
				}
				if at(i-1) == "local" {
					bad(t, "%s declared again", t.text)
				}
			case strings.HasPrefix(t.text, "taskq_key_") || t.text == "taskq_spec":
				if !d.shared[t.text] {
					bad(t, "%s is no layout function", t.text)
				}
				if at(i-1) == "function" {
					bad(t, "%s declared again", t.text)
				}
			}
		case luaOther:
			switch t.text {
			case "(", "[", "{":
				brackets = append(brackets, t.text)
			case ")", "]", "}":
				if len(brackets) > 0 {
					brackets = brackets[:len(brackets)-1]
				}
				if subscript >= 0 && len(brackets) == subscript {
					if !subscriptNamed {
						bad(t, "ARGV or KEYS read without the script's layout constants")
					}
					subscript = -1
				}
			}
		}
	}
	return out
}

// (c) No script or module spells out a field name or joins a key by hand,
// nor reads ARGV or KEYS at a position written as a number: the layout's
// constants and builders say them.
func TestScriptsUseTheLayout(t *testing.T) {
	d := readLayout(t)
	for name, src := range luaFiles(t) {
		for _, v := range layoutViolations(d, name, src) {
			t.Error(v)
		}
	}
}

// The check of the scripts catches what it is for.
func TestScriptLayoutCheckSeesViolations(t *testing.T) {
	d := readLayout(t)
	for _, c := range []struct{ file, src, want string }{
		{"lua/cancel.lua", "redis.call('HGET', KEYS[KEY_RUN], 'status')", "field name 'status'"},
		{"lua/cancel.lua", "redis.call('HSET', k, RUN_STATUS, 'queued', 'error', e)", "field name 'error'"},
		{"lua/lib/x.lua", "local k = prefix .. 'run:' .. id", "key part 'run:'"},
		{"lua/lib/x.lua", "redis.call('ZREM', prefix .. 'retry', id)", "key part 'retry'"},
		{"lua/lib/x.lua", "if e[2][1] == 'id' then end", "stream entry field 'id'"},
		{"lua/cancel.lua", "local id = ARGV[1]", "ARGV or KEYS read without"},
		{"lua/enqueue.lua", "local x = ARGV[a + 13]", "position 13"},
		{"lua/enqueue.lua", "for i = 0, #KEYS / 4 - 1 do end", "position 4"},
		{"lua/enqueue.lua", "local x = ARGV[ARG_RUN_ID]", "ARG_RUN_ID is no layout constant"},
		{"lua/lib/x.lua", "local x = ARGV[2]", "ARGV read in a module"},
		{"lua/lib/x.lua", "local RUN_STATUS = 'state'", "RUN_STATUS declared again"},
	} {
		got := strings.Join(layoutViolations(d, c.file, c.src), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("%s: %q gave %q, want %q", c.file, c.src, got, c.want)
		}
	}
	// What the layout does not declare is left alone: values, replies.
	ok := "local s = redis.call('HGET', KEYS[KEY_RUN], RUN_STATUS)\nif s == 'status' or ARGV[ARG_REASON] == 'key' then return {0, 'finished'} end"
	if v := layoutViolations(d, "lua/cancel.lua", ok); len(v) > 0 {
		t.Errorf("violations in code that follows the layout: %q", v)
	}
}

// The Go files of the package say no field name or key part that layout.go
// declares: they use its constants.
func TestGoUsesTheLayout(t *testing.T) {
	d := readLayout(t)
	fset := token.NewFileSet()
	files, _ := fs.Glob(os.DirFS("."), "*.go")
	for _, f := range files {
		if f == "layout.go" || strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			var lit *ast.BasicLit
			switch x := n.(type) {
			case *ast.IndexExpr:
				lit, _ = x.Index.(*ast.BasicLit)
			case *ast.CallExpr:
				if sel, ok := x.Fun.(*ast.SelectorExpr); ok && strings.HasPrefix(sel.Sel.Name, "H") && len(x.Args) > 1 {
					for _, a := range x.Args[1:] {
						if l, ok := a.(*ast.BasicLit); ok && l.Kind == token.STRING {
							if v, _ := strconv.Unquote(l.Value); d.fields[v] {
								t.Errorf("%s: field %s spelled out: use its constant in layout.go", fset.Position(l.Pos()), l.Value)
							}
						}
					}
				}
			case *ast.BasicLit:
				if v, err := strconv.Unquote(x.Value); err == nil && x.Kind == token.STRING && d.goLiteral[v] {
					t.Errorf("%s: key part %s spelled out: use its constant in layout.go", fset.Position(x.Pos()), x.Value)
				}
			}
			if lit != nil && lit.Kind == token.STRING {
				if v, _ := strconv.Unquote(lit.Value); d.fields[v] {
					t.Errorf("%s: field %s spelled out: use its constant in layout.go", fset.Position(lit.Pos()), lit.Value)
				}
			}
			return true
		})
	}
}

// Every function a script calls is defined before it, in the library and
// in the script's EVAL source: scriptModules gives each script the
// modules it needs.
func TestScriptsAreGivenTheModulesTheyCall(t *testing.T) {
	check := func(name, src string) {
		if first, rest, ok := strings.Cut(src, "\n"); ok && strings.HasPrefix(first, "#!") {
			src = rest
		}
		toks, err := luaTokens(src)
		if err != nil {
			t.Fatal(err)
		}
		seen, prev := map[string]bool{}, ""
		for _, tk := range toks {
			if tk.kind == luaName && strings.HasPrefix(tk.text, "taskq_") {
				if prev == "function" {
					seen[tk.text] = true
				} else if !seen[tk.text] {
					t.Errorf("%s calls %s, not defined before", name, tk.text)
				}
			}
			if tk.kind != luaSpace && tk.kind != luaComment {
				prev = tk.text
			}
		}
	}
	for _, sc := range allScripts {
		check(sc.name, sc.src)
	}
	check("the library", library)
}

// The tokens of every Lua file give it back whole.
func TestLuaTokensKeepTheSource(t *testing.T) {
	for name, src := range luaFiles(t) {
		toks, err := luaTokens(src)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b strings.Builder
		for _, tk := range toks {
			b.WriteString(tk.text)
		}
		if b.String() != src {
			t.Errorf("%s: tokens do not give the source back", name)
		}
	}
	toks, err := luaTokens("a = [==[x]]y]==] .. 'q\\'s' --[[c\n]] 1.5e+3 ~= b...")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, tk := range toks {
		if tk.kind != luaSpace {
			kinds = append(kinds, fmt.Sprintf("%d:%s", tk.kind, tk.text))
		}
	}
	want := []string{"2:a", "5:=", "4:[==[x]]y]==]", "5:..", "4:'q\\'s'", "1:--[[c\n]]", "3:1.5e+3", "5:~=", "2:b", "5:..."}
	if !slices.Equal(kinds, want) {
		t.Errorf("tokens %q, want %q", kinds, want)
	}
}
