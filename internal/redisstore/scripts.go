package redisstore

import (
	"crypto/sha1"
	"embed"
	"encoding/hex"
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

// script is one Lua script of lua/. On Redis 7 and later the store calls it
// as a function of the store's one library (see library.go); elsewhere
// (Redis 6.2, miniredis) it sends its EVAL source with EVALSHA: the layout
// (lua/layout_gen.lua, its shared part and the script's own section), the
// modules it calls and its file, one after the other. Each script is
// loaded once, in the Go file of its name (enqueue.go holds
// enqueueScript); they are immutable.
type script struct {
	name string
	// flags are those of the file's shebang line ("#!lua flags=allow-oom"),
	// which lets a script that ends or advances runs already accepted run
	// at maxmemory, so that workers drain the queue while new triggers are
	// refused (see docs/operations.md).
	flags   []string
	section string // the layout's section of the script's KEYS and ARGV
	body    string // the file without its shebang line
	// publishes says the script (or a module it calls) publishes notices
	// with CMD_PUBLISH, which a store on a cluster sends with SPUBLISH.
	publishes bool
	src       string // the EVAL source, shebang included (ScriptSource)
	*redis.Script
	// plain is the EVAL source without its shebang line, for servers that
	// cannot compile one (Redis before 7.0, miniredis); nil for a script
	// that has none.
	plain *redis.Script
	// sharded is the EVAL source a store on a Redis Cluster sends, its
	// notices sent with SPUBLISH; nil for a script that publishes nothing.
	sharded *redis.Script
	// fn and shardedFn name the script's functions in the library (see
	// library.go); shardedFn is "" where sharded is nil.
	fn, shardedFn string
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
	concurrencyUnparkScript, takeParkedScript, wakeScript,
	recordChildrenScript, takeCascadesScript, forgetWaitersScript, readScript,
}

// layoutShared is the generated layout's part every script reads, and
// layoutSections the section of each script's own constants.
var layoutShared, layoutSections = layoutParts(mustRead("lua/layout_gen.lua"))

// moduleSources holds each module's file.
var moduleSources = func() map[string]string {
	m := map[string]string{}
	for _, name := range luaModules {
		m[name] = mustRead("lua/lib/" + name + ".lua")
	}
	return m
}()

func mustRead(name string) string {
	b, err := luaFS.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: the tests load every script
	}
	return string(b)
}

// cmdPublishSharded goes between the layout and the modules of a script's
// sharded EVAL source: the layout declares CMD_PUBLISH as PUBLISH.
const cmdPublishSharded = "CMD_PUBLISH = 'S" + cmdPublish + "'\n"

// loadScript loads lua/<name>.lua.
func loadScript(name string) *script {
	sc := &script{name: name, section: layoutSections[name], body: mustRead("lua/" + name + ".lua")}
	shebang := ""
	if first, rest, ok := strings.Cut(sc.body, "\n"); ok && strings.HasPrefix(first, "#!") {
		shebang, sc.body = first+"\n", rest
		for _, f := range strings.Fields(first)[1:] {
			if v, ok := strings.CutPrefix(f, "flags="); ok {
				sc.flags = strings.Split(v, ",")
			}
		}
	}
	var mods strings.Builder
	for _, m := range scriptModules(sc.body) {
		mods.WriteString(moduleSources[m] + "\n")
	}
	layout := layoutShared + "\n" + sc.section + "\n"
	// The body runs as a function, as in the library: its locals get a
	// frame of their own, apart from the layout's and the modules'
	// (gopher-lua, miniredis's Lua, counts both against one limit).
	body := "local function taskq_main(KEYS, ARGV)\n" + sc.body + "\nend\nreturn taskq_main(KEYS, ARGV)\n"
	plain := layout + mods.String() + body
	sc.publishes = strings.Contains(mods.String()+sc.body, "CMD_PUBLISH")
	sc.src = shebang + plain
	sc.Script = redis.NewScript(sc.src)
	if shebang != "" {
		sc.plain = redis.NewScript(plain)
	}
	if sc.publishes {
		sc.sharded = redis.NewScript(shebang + layout + cmdPublishSharded + mods.String() + body)
	}
	return sc
}

// luaDefined matches the definition of a module's function.
var luaDefined = regexp.MustCompile(`(?m)^local function (taskq_[a-z0-9_]+)\(`)

// scriptModules returns the modules, in the order of luaModules, that
// define a function code calls, and those their functions call. A
// mention in a comment may bring in a module not needed: it costs an EVAL
// its definitions, never a wrong answer.
func scriptModules(code string) []string {
	need := map[string]bool{}
	for _, m := range slices.Backward(luaModules) {
		src := moduleSources[m]
		for _, d := range luaDefined.FindAllStringSubmatch(src, -1) {
			if strings.Contains(code, d[1]+"(") {
				need[m] = true
				code += src // what it calls is needed too
				break
			}
		}
	}
	var out []string
	for _, m := range luaModules {
		if need[m] {
			out = append(out, m)
		}
	}
	return out
}

// layoutSection opens the section of one script's own constants in the
// generated layout (layoutgen.SectionPrefix).
const layoutSection = "-- @script "

// layoutParts cuts the generated layout into its shared part and the
// section of each script.
func layoutParts(gen string) (shared string, sections map[string]string) {
	shared, rest, _ := strings.Cut(gen, "\n"+layoutSection)
	sections = map[string]string{}
	if rest == "" {
		return shared, sections
	}
	for _, s := range strings.Split(rest, "\n"+layoutSection) {
		n, text, _ := strings.Cut(s, "\n")
		sections[n] = text
	}
	return shared, sections
}

// library is the store's Redis Functions library: the layout's shared
// part and every module once, at its top level, then each script in a
// block of its own with its section of the layout, registered as a
// function whose body is the script's file (see library.go). It is named
// after its content, as are its functions (Redis names functions across
// libraries), so that stores of two versions of taskq share a server.
var library = func() string {
	sum := sha1.Sum([]byte(libraryText(allScripts, "")))
	return libraryText(allScripts, hex.EncodeToString(sum[:8]))
}()

// libraryText returns the library's source, its names ending in sum, and
// sets each script's function names.
func libraryText(scripts []*script, sum string) string {
	var b strings.Builder
	b.WriteString("#!lua name=taskq_" + sum + "\n" + layoutShared + "\n")
	for _, m := range luaModules {
		b.WriteString(moduleSources[m] + "\n")
	}
	for _, sc := range scripts {
		flags := ""
		if len(sc.flags) > 0 {
			flags = "'" + strings.Join(sc.flags, "', '") + "'"
		}
		register := func(fn, publish string) {
			fmt.Fprintf(&b, "redis.register_function{function_name = '%s', flags = {%s}, callback = function(KEYS, ARGV)\n", fn, flags)
			if publish != "" {
				// Every function that publishes sets the command it
				// publishes with: the modules read it as an upvalue.
				b.WriteString("CMD_PUBLISH = '" + publish + "'\n")
			}
			b.WriteString(sc.body + "\nend}\n")
		}
		b.WriteString("do\n" + sc.section + "\n")
		sc.fn, sc.shardedFn = "taskq_"+sc.name+"_"+sum, ""
		if !sc.publishes {
			register(sc.fn, "")
		} else {
			register(sc.fn, cmdPublish)
			sc.shardedFn = "taskq_" + sc.name + "_sharded_" + sum
			register(sc.shardedFn, "S"+cmdPublish)
		}
		b.WriteString("end\n")
	}
	return b.String()
}

// variant returns the EVAL form of sc the store sends: sharded on a
// cluster, without its shebang once the server turned out unable to
// compile one.
func (s *Store) variant(sc *script) *redis.Script {
	switch {
	case s.sharded && sc.sharded != nil:
		return sc.sharded
	case sc.plain != nil && s.plain.Load():
		return sc.plain
	}
	return sc.Script
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
