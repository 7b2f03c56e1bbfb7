// Package history records what every process of a taskq deployment asked
// Redis to do and what it was told, and checks the record against a model of
// key ownership and run lifecycle.
//
// Recording. A Recorder writes one JSON line when an operation is called and
// one when it returns, so an operation in flight when its process is
// SIGKILLed still appears (as one whose outcome is unknown). Hook is a
// go-redis hook that records every script call that changes a run or a key
// (enqueue, start, finish, cancel, requeue) with the reply Redis gave; each
// script is atomic in Redis, so each call is one operation with a call and a
// return time. Load generators add client-level operations (KindTrigger: what
// the caller of TriggerJSON was told) and reads taken once the load is over.
// Every process writes its own file; ReadFiles merges them.
//
// Checking. Check partitions the operations by idempotency key (a run
// without a key is a partition of its own) and runs the porcupine
// linearizability checker on each partition with the model in model.go, then
// checks the invariants the guarantees name directly, so a failure says in
// plain words what went wrong: a run accepted but never ended, two owners of
// one key at once, a collision naming a run that did not own the key, a
// write by a stale attempt, an attempt begun twice (by two starts, or by a
// start and a finish that began it itself), a trigger that failed but
// created a run.
package history
