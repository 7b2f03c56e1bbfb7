// Package client triggers taskq runs and follows them.
//
// A run starts with a trigger: RunNoWait (or Run, which also waits, or
// RunMany for a batch) derives the task's idempotency key from the input
// and metadata with its CEL expression, then one Lua script in Redis claims
// the key, creates the run record and queues the run on the task's stream.
// If another run holds the key, nothing is created and the conflict policy
// decides the answer: an *IdempotencyCollisionError naming the owner
// (reject, the default), the owner's handle (attach), a takeover that
// cancels the owner (supersede), or the input delivered to the owner as a
// signal (signal).
//
// Every answer is a *RunHandle (typed: RunRef[O]) to a run, whether the
// caller created it or a collision named it: Get, Status, Wait, Result,
// Cancel and Signal work on both. Waiting is woken by the run's completion
// notice over Redis Pub/Sub, not by polling.
//
// Before anything is written, every trigger — this package's, the HTTP
// API's, the command line's and an event's — is checked the same way: its
// size limits (a *LimitError), its key (typed errors from package
// idempotency), its options. A refused trigger created nothing.
//
// New connects to Redis (Options.RedisURL, default $TASKQ_REDIS_URL, then
// redis://127.0.0.1:6379/0, or an existing go-redis client as
// Options.Redis). A Client is safe for concurrent use, and triggers made at
// the same time by many goroutines share round trips; make one per process
// and Close it at the end.
//
// Inspector (Client.Inspector) reads what the namespace holds — runs,
// keys, events, registered tasks, page by page with cursors — and acts on
// it: cancel, owner-fenced key release, signal. The command line and the
// HTTP API are built on it.
//
// Runs are executed by package worker; tasks are defined once, typed, in
// package task and shared by both sides.
package client
