package redisstore

import (
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua lua/lib/*.lua
var luaFS embed.FS

// The modules of lua/lib/, in the order they go before a script: each may
// call those before it.
var luaModules = []string{
	"errors",      // error replies
	"record",      // a run record's status and flags
	"attempts",    // a run's attempt history
	"stream",      // a task stream's deliveries
	"ending",      // ending runs
	"concurrency", // a concurrency group's slots
	"signals",     // appending a signal
	"claim",       // claiming an idempotency key for a new run
	"events",      // an event record and its indexes
	"suppressed",  // the record of a trigger that created no run
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
	// sharded is the script as a store on a Redis Cluster runs it, its
	// notices sent with SPUBLISH (see shardedSource); nil for a script
	// that publishes nothing.
	sharded *redis.Script
	// fn and shardedFn are the script and its sharded form as Redis
	// functions (see functions.go); shardedFn is nil where sharded is.
	fn, shardedFn *function
}

// allScripts lists every script the store runs.
var allScripts = []*script{
	enqueueScript, startScript, finishScript, cancelScript, heartbeatScript, promoteScript, requeueScript,
	sweepScript, releaseScript, registerScript, signalScript, pushEventScript, saveStepScript, watchScript,
	ensureGroupScript, storeEventScript, triggerEventScript, recordEventScript, takeFanoutsScript, linkRetryScript,
	ratelimitTakeScript, ratelimitReturnScript, ratelimitDeferScript,
	rescheduleScript,
	saveScheduleScript, pauseScheduleScript, deleteScheduleScript, advanceScheduleScript,
	concurrencyAcquireScript, concurrencyReleaseScript, concurrencyRenewScript, concurrencyParkScript,
	concurrencyUnparkScript, takeParkedScript,
}

// scriptForms lists the second forms of scripts of allScripts (see
// loadScriptForm), which have the name of the script they are a form of.
var scriptForms = []*script{enqueueScheduledScript}

// loadScript loads lua/<name>.lua with the modules it calls.
func loadScript(name string, modules ...string) *script {
	return loadScriptForm(name, nil, modules...)
}

// loadScriptForm loads a form of lua/<name>.lua: its file with edit
// applied (before the layout is folded in, so the edited text may name the
// layout's constants), for a script that has a second form for calls that
// need more than the common one, so that the common calls pay nothing for
// it (see enqueueScheduledScript). A nil edit loads the file as it is.
func loadScriptForm(name string, edit func(string) string, modules ...string) *script {
	src, plain, err := assembleScript(name, modules, edit)
	if err != nil {
		panic(err) // embedded at build time: the tests load every script
	}
	sc := &script{name: name, src: src, Script: redis.NewScript(src)}
	if plain != "" {
		sc.plain = redis.NewScript(plain)
	}
	if sc.fn, err = newFunction(name, src); err != nil {
		panic(err)
	}
	if sharded := shardedSource(src); sharded != src {
		sc.sharded = redis.NewScript(sharded)
		if sc.shardedFn, err = newFunction(name, sharded); err != nil {
			panic(err)
		}
	}
	return sc
}

// shardedSource returns src, an assembled script, with its notices sent
// with SPUBLISH rather than PUBLISH. The layout's CMD_PUBLISH is folded
// into every use as the literal 'PUBLISH' (see foldLayout), so the form for
// one node costs what a script written with PUBLISH would, and this one is
// the same source with that literal changed: one script file, two forms,
// no flag for Redis to test on every call. Only a cluster with Redis 7.0
// or later (which the sharded form needs) runs it.
func shardedSource(src string) string {
	return strings.ReplaceAll(src, "redis.call('"+cmdPublish+"', ", "redis.call('S"+cmdPublish+"', ")
}

// variant returns the form of sc the store sends: sharded on a cluster,
// without its shebang once the server turned out unable to compile one.
func (s *Store) variant(sc *script) *redis.Script {
	switch {
	case s.sharded && sc.sharded != nil:
		return sc.sharded
	case sc.plain != nil && s.plain.Load():
		return sc.plain
	}
	return sc.Script
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
func assembleScript(name string, modules []string, edit func(string) string) (src, plain string, err error) {
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return "", "", err
	}
	if edit != nil {
		body = []byte(edit(string(body)))
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
	plain, err = foldLayout(shared+"\n"+section, strings.Join(append(parts, scriptBodyMark+rest), "\n"))
	if err != nil {
		return "", "", fmt.Errorf("script %s: %w", name, err)
	}
	if shebang == "" {
		return plain, "", nil
	}
	return shebang + "\n" + plain, plain, nil
}

// checkCalls reports a call of a taskq_ function that src, an assembled
// script, does not define: a module missing from the script's list, which
// Redis would report only when the call runs. The tests run it over every
// script (TestEveryScriptDefinesTheFunctionsItCalls) rather than every
// process at start, where it would cost some 25 ms.
func checkCalls(src string) error {
	toks, err := luaTokens(src)
	if err != nil {
		return err
	}
	var sig []luaToken
	for _, t := range toks {
		if t.kind != luaSpace && t.kind != luaComment {
			sig = append(sig, t)
		}
	}
	defined := map[string]bool{}
	for i := 2; i < len(sig); i++ {
		if sig[i-2].text == "local" && sig[i-1].text == "function" {
			defined[sig[i].text] = true
		}
	}
	for i := 0; i+1 < len(sig); i++ {
		t := sig[i]
		if t.kind == luaName && strings.HasPrefix(t.text, "taskq_") && sig[i+1].text == "(" && !defined[t.text] {
			return fmt.Errorf("line %d calls %s, which no module of the script defines", t.line, t.text)
		}
	}
	return nil
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
