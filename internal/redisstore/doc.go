// Package redisstore is the only place taskq talks to Redis.
//
// keys.go builds every key (one hash tag per namespace, so every script
// stays in one cluster slot). Each state change of a run is one Lua script
// in lua/, embedded and prefixed with lua/lib.lua; its header lists KEYS,
// ARGV and every reply, and the Go wrapper beside it turns replies into
// typed results. The current time is always passed in from Go.
package redisstore
