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
}

func loadScript(name string) *script {
	lib, err := luaFS.ReadFile("lua/lib.lua")
	if err != nil {
		panic(err) // embedded at build time: cannot fail
	}
	body, err := luaFS.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic(err)
	}
	return &script{name: name, Script: redis.NewScript(string(lib) + "\n" + string(body))}
}

// scripts holds every script the store runs. Loaded once per process;
// the scripts are immutable, so sharing them between stores is safe.
type scripts struct {
	enqueue, start, finish, cancel, heartbeat, promote, requeue, sweep, release, register, signal, pushEvent, saveStep, watch *script
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
	}
}

func (s *scripts) all() []*script {
	return []*script{s.enqueue, s.start, s.finish, s.cancel, s.heartbeat, s.promote, s.requeue, s.sweep, s.release, s.register, s.signal, s.pushEvent, s.saveStep, s.watch}
}

// isNoScript reports whether err says the script cache lacks a script, as it
// does after Redis restarts.
func isNoScript(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT")
}
