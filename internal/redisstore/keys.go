package redisstore

import "strings"

// Key layout. Every key of a namespace lives under one prefix whose hash tag
// is the namespace, so every script touches a single Redis Cluster slot:
//
//	taskq:{ns}:key:<idempotency key>  string  owner run ID, expires per strategy
//	taskq:{ns}:run:<run id>           hash    the run record
//	taskq:{ns}:stream:<task>          stream  queued deliveries of a task (group "taskq")
//	taskq:{ns}:retry                  zset    runs waiting for a retry or a debounce window, by due time (ms)
//	taskq:{ns}:signals:<run id>       stream  signals sent to the run, in order
//	taskq:{ns}:steps:<run id>         hash    results of the run's completed durable steps
//	taskq:{ns}:runs                   zset    index of runs by creation time (ms), for listing and sweeping
//	taskq:{ns}:tasks                  hash    registered task definitions by name
//	taskq:{ns}:event:<event id>       hash    an ingested event
//	taskq:{ns}:events                 zset    index of events by time (ms)
//	taskq:{ns}:eventkey:<event key>   zset    index of the events of one event key, by time (ms)
//	taskq:{ns}:done:<run id>          channel published when a watched run reaches a terminal status
//	taskq:{ns}:finished               channel counting runs that reached a terminal status
//	taskq:{ns}:cancel                 channel run IDs cancelled while running
//	taskq:{ns}:worker:<name>          hash    a worker's presence record, expires once it is long dead
//	taskq:{ns}:workers                zset    index of worker records, by when each expires (ms)
//
// Scripts receive the prefix and build the keys they derive from a run record
// (its stream, its idempotency key) with it; those keys share the hash tag.

// NamespaceDefault is the namespace used when none is configured.
const NamespaceDefault = "default"

// GroupName is the consumer group every task stream is read through.
const GroupName = "taskq"

// Keys builds every Redis key and channel name of one namespace.
type Keys struct {
	ns     string
	prefix string
}

// NewKeys returns the key builder for namespace ns ("" means NamespaceDefault).
func NewKeys(ns string) Keys {
	if ns == "" {
		ns = NamespaceDefault
	}
	return Keys{ns: ns, prefix: "taskq:{" + ns + "}:"}
}

// Namespace is the namespace the keys belong to.
func (k Keys) Namespace() string { return k.ns }

// Prefix is the common prefix of every key in the namespace, hash tag included.
func (k Keys) Prefix() string { return k.prefix }

// IdempotencyKey is the string key holding the owner of an idempotency key.
func (k Keys) IdempotencyKey(key string) string { return k.prefix + "key:" + key }

// Run is the hash holding a run record.
func (k Keys) Run(runID string) string { return k.prefix + "run:" + runID }

// Stream is the stream of queued deliveries of a task.
func (k Keys) Stream(task string) string { return k.prefix + "stream:" + task }

// Signals returns the key of a run's ordered signal stream.
func (k Keys) Signals(runID string) string { return k.prefix + "signals:" + runID }

// Steps returns the key of the hash holding a run's completed step results.
func (k Keys) Steps(runID string) string { return k.prefix + "steps:" + runID }

// Retry is the sorted set of runs waiting for a retry.
func (k Keys) Retry() string { return k.prefix + "retry" }

// Runs is the sorted set indexing runs by creation time.
func (k Keys) Runs() string { return k.prefix + "runs" }

// Tasks is the hash of registered task definitions.
func (k Keys) Tasks() string { return k.prefix + "tasks" }

// Event is the hash holding one ingested event.
func (k Keys) Event(id string) string { return k.prefix + "event:" + id }

// EventKeyIndex is the sorted set indexing the events of one event key.
func (k Keys) EventKeyIndex(eventKey string) string { return k.prefix + "eventkey:" + eventKey }

// Events is the sorted set indexing events by time.
func (k Keys) Events() string { return k.prefix + "events" }

// DoneChannel is published with the run's status when it reaches a
// terminal status, if WatchRun asked for it.
func (k Keys) DoneChannel(runID string) string { return k.prefix + "done:" + runID }

// FinishedChannel is published with how many runs reached each terminal
// status ("succeeded 30 failed 1") by each call that ended some.
func (k Keys) FinishedChannel() string { return k.prefix + "finished" }

// CancelChannel carries the IDs of runs cancelled while a worker may hold them.
func (k Keys) CancelChannel() string { return k.prefix + "cancel" }

// Worker is the hash holding the presence record of one worker.
func (k Keys) Worker(name string) string { return k.prefix + "worker:" + name }

// Workers is the sorted set indexing worker records by when they expire.
func (k Keys) Workers() string { return k.prefix + "workers" }

// IdempotencyKeyPattern is a SCAN MATCH pattern for idempotency keys whose
// user-visible part matches glob.
func (k Keys) IdempotencyKeyPattern(glob string) string {
	if glob == "" {
		glob = "*"
	}
	return escapeGlob(k.prefix+"key:") + glob
}

// TrimIdempotencyKey turns a Redis key back into the user-visible idempotency key.
func (k Keys) TrimIdempotencyKey(redisKey string) string {
	return strings.TrimPrefix(redisKey, k.prefix+"key:")
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}
