// Package redisstore is the only place taskq talks to Redis.
//
// layout.go declares the data layout once: the keys (one hash tag per
// namespace, so every script stays in one cluster slot), the fields of the
// run record and of stream entries, the order of a run's spec, and the
// KEYS and ARGV of every script. keys.go builds the keys from it. Each
// state change of a run is one Lua script in lua/, whose header lists its
// KEYS, ARGV and every reply, and whose Go file of the same name
// (enqueue.lua, enqueue.go) sends it and turns its replies into typed
// results. The current time is always passed in from Go.
//
// A script is loaded with what it needs before it: the Lua side of the
// layout, lua/layout_gen.lua, which go generate writes from layout.go
// (constants, key builders such as taskq_key_run), and the modules of
// lua/lib it calls (claim.lua claims an idempotency key for a new run,
// ending.lua ends runs, ...). On Redis 7 and later they are the top level
// of one Redis Functions library, each script a function of it (see
// library.go); elsewhere each script is sent with them before it.
// layout_test.go holds the scripts and the Go code to the declaration.
package redisstore
