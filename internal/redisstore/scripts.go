package redisstore

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed lua/*.lua
var luaFS embed.FS

// script is one embedded Lua script, prefixed with lib.lua.
type script struct {
	name string
	*redis.Script
	// plain is the script without its shebang line, for servers that
	// cannot compile one (Redis before 7.0, miniredis); nil for a script
	// that has none.
	plain *redis.Script
}

// A script file may start with a shebang line declaring flags (Redis 7):
// "#!lua flags=allow-oom" lets the scripts that end or advance runs already
// accepted keep running when Redis is at maxmemory, so that workers drain
// the queue and free memory while new triggers are refused (see
// docs/operations.md). The shebang must open the source Redis compiles, so
// it goes before lib.lua.
func scriptSources(name string) (src, plain string, err error) {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		return "", "", err
	}
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		return "", "", err
	}
	plain = string(lib) + "\n" + string(body)
	if shebang, rest, ok := strings.Cut(string(body), "\n"); ok && strings.HasPrefix(shebang, "#!") {
		plain = string(lib) + "\n" + rest
		return shebang + "\n" + plain, plain, nil
	}
	return plain, "", nil
}

func loadScript(name string) *script {
	src, plain, err := scriptSources(name)
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	sc := &script{name: name, Script: redis.NewScript(src)}
	if plain != "" {
		sc.plain = redis.NewScript(plain)
	}
	return sc
}

// scripts holds every script the store runs. Loaded once per process;
// the scripts are immutable, so sharing them between stores is safe.
type scripts struct {
	enqueue, start, finish, cancel, heartbeat, promote, requeue, sweep, release, register, signal, pushEvent, saveStep, watch,
	ensureGroup *script
}

func newScripts() *scripts {
	return &scripts{
		enqueue:   loadScript("enqueue"),
		start:     loadScript("start"),
		finish:    loadScript("finish"),
		cancel:    loadScript("cancel"),
		heartbeat: loadScript("heartbeat"),
		promote:   loadScript("promote"),
		requeue:   loadScript("requeue"),
		sweep:     loadScript("sweep"),
		release:   loadScript("release"),
		register:  loadScript("register"),
		signal:    loadScript("signal"),
		pushEvent: loadScript("push_event"),
		saveStep:  loadScript("save_step"),
		watch:     loadScript("watch"),

		ensureGroup: loadScript("ensure_group"),
	}
}

func (s *scripts) all() []*script {
	return []*script{s.enqueue, s.start, s.finish, s.cancel, s.heartbeat, s.promote, s.requeue, s.sweep, s.release, s.register, s.signal, s.pushEvent, s.saveStep, s.watch, s.ensureGroup}
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
