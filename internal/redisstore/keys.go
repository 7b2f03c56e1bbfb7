package redisstore

import (
	"strconv"
	"strings"

	"github.com/taskq/taskq/internal/engine"
)

// Keys of a namespace: see the key layout in layout.go.

// GroupName is the consumer group every task stream is read through.
const GroupName = "taskq"

// Keys builds every Redis key and channel name of one partition of a
// namespace (see PartitionPrefix). The keys of namespace-wide records (the
// meta record, the task registry, worker presence) are the home
// partition's whatever partition a Keys is of.
type Keys struct {
	ns     string
	prefix string
	// home is partition 0's prefix, taskq:{ns}:.
	home string
	part int
}

// NewKeys returns the key builder of partition 0, the home partition, of
// namespace ns ("" means NamespaceDefault).
func NewKeys(ns string) Keys {
	if ns == "" {
		ns = engine.NamespaceDefault
	}
	home := PartitionPrefix(ns, 0, 1)
	return Keys{ns: ns, prefix: home, home: home}
}

// partitionKeys returns the key builder of partition i of n of namespace ns.
func partitionKeys(ns string, i, n int) Keys {
	k := NewKeys(ns)
	k.prefix, k.part = PartitionPrefix(k.ns, i, n), i
	return k
}

// Namespace is the namespace the keys belong to.
func (k Keys) Namespace() string { return k.ns }

// Partition is the partition the keys belong to.
func (k Keys) Partition() int { return k.part }

// Prefix is the common prefix of every key of the partition, hash tag
// included.
func (k Keys) Prefix() string { return k.prefix }

// IdempotencyKey is the string key holding the owner of an idempotency key.
func (k Keys) IdempotencyKey(key string) string { return k.prefix + keyIdempotency + key }

// Run is the hash holding a run record.
func (k Keys) Run(runID string) string { return k.prefix + keyRun + runID }

// Stream is the stream of queued deliveries of a task: of its runs of the
// default priority.
func (k Keys) Stream(task string) string { return k.prefix + keyStream + task }

// Lane is the stream of a task's runs of priority prio: Stream for the
// default (or 0), else its lane (see streamLane).
func (k Keys) Lane(task string, prio int) string { return k.Stream(laneName(task, prio)) }

// laneName is what names a task's stream of priority prio after the
// stream prefix: the task, with the lane's suffix above the default.
func laneName(task string, prio int) string {
	if prio <= engine.PriorityDefault {
		return task
	}
	return task + streamLane + strconv.Itoa(prio)
}

// priorities lists the priorities, the highest first, as streams are read.
var priorities = func() []int {
	var ps []int
	for p := engine.PriorityMax; p >= engine.PriorityDefault; p-- {
		ps = append(ps, p)
	}
	return ps
}()

// Signals returns the key of a run's ordered signal stream.
func (k Keys) Signals(runID string) string { return k.prefix + keySignals + runID }

// Steps returns the key of the hash holding a run's completed step results.
func (k Keys) Steps(runID string) string { return k.prefix + keySteps + runID }

// Attempts returns the key of a run's attempt history: its attempts that
// ended without succeeding, the latest MaxAttemptRecords.
func (k Keys) Attempts(runID string) string { return k.prefix + keyAttempts + runID }

// Children returns the key of the hash of a run's children, by name.
func (k Keys) Children(runID string) string { return k.prefix + keyChildren + runID }

// Cascades is the sorted set of the partition's cancelled runs whose
// children are still to be cancelled.
func (k Keys) Cascades() string { return k.prefix + keyCascades }

// Suppressed is the partition's stream of suppressed-trigger records.
func (k Keys) Suppressed() string { return k.prefix + keySuppressed }

// Turns is the hash of the partition's counts of higher-priority runs read
// while a lower priority waited, per task and priority (see read.lua).
func (k Keys) Turns() string { return k.prefix + keyTurns }

// Retry is the sorted set of runs waiting for a retry.
func (k Keys) Retry() string { return k.prefix + keyRetry }

// Runs is the sorted set indexing runs by creation time.
func (k Keys) Runs() string { return k.prefix + keyRuns }

// Event is the hash holding one ingested event.
func (k Keys) Event(id string) string { return k.prefix + keyEvent + id }

// EventKeyIndex is the sorted set indexing the events of one event key.
func (k Keys) EventKeyIndex(eventKey string) string { return k.prefix + keyEventKeyIndex + eventKey }

// Events is the sorted set indexing events by time.
func (k Keys) Events() string { return k.prefix + keyEvents }

// Fanouts is the sorted set of events whose fan-out is pending, by when a
// recoverer may take it over.
func (k Keys) Fanouts() string { return k.prefix + keyFanouts }

// EventTrigger is the string recording what the fan-out of an event did to
// one subscribed task: the marker that makes its trigger idempotent.
func (k Keys) EventTrigger(eventID, task string) string {
	return k.prefix + keyEventTrigger + eventID + ":" + task
}

// under returns the builder of the namespace's keys under prefix: the
// prefix of the partition an event or a run lives in (see fanout.go), with
// its own hash tag.
func (k Keys) under(prefix string) Keys { return Keys{ns: k.ns, prefix: prefix} }

// DoneChannel is published with the run's status when it reaches a
// terminal status, if WatchRun asked for it.
func (k Keys) DoneChannel(runID string) string { return k.prefix + keyDone + runID }

// FinishedChannel is published with how many runs reached each terminal
// status ("succeeded 30 failed 1") by each call that ended some.
func (k Keys) FinishedChannel() string { return k.prefix + keyFinished }

// CancelChannel carries the IDs of runs cancelled while a worker may hold them.
func (k Keys) CancelChannel() string { return k.prefix + keyCancel }

// Meta is the hash of the namespace's own settings (its partition count):
// always in the home partition.
func (k Keys) Meta() string { return k.home + keyMeta }

// Tasks is the hash of registered task definitions: always in the home
// partition.
func (k Keys) Tasks() string { return k.home + keyTasks }

// Schedule is the hash of one cron schedule and its cursor: always in the
// home partition.
func (k Keys) Schedule(name string) string { return k.home + keySchedule + name }

// Schedules is the set of the namespace's schedule names: always in the
// home partition.
func (k Keys) Schedules() string { return k.home + keySchedules }

// Paused is the hash of paused tasks, each with when it was paused (unix
// ms): always in the home partition.
func (k Keys) Paused() string { return k.home + keyPaused }

// Worker is the hash holding the presence record of one worker: always in
// the home partition.
func (k Keys) Worker(name string) string { return k.home + keyWorker + name }

// Workers is the sorted set indexing worker records by when they expire:
// always in the home partition.
func (k Keys) Workers() string { return k.home + keyWorkers }

// UISession is the string marking one dashboard session live: always in
// the home partition, beside UISessionGeneration.
func (k Keys) UISession(id string) string { return k.home + keyUISession + id }

// EventWaiters are the runs waiting for an event of eventKey: always in
// the home partition.
func (k Keys) EventWaiters(eventKey string) string { return k.home + keyEventWaiters + eventKey }

// EventWaits is the index of the event keys that have waiters: always in
// the home partition.
func (k Keys) EventWaits() string { return k.home + keyEventWaits }

// UISessionGeneration is the counter that "sign out everywhere" raises:
// always in the home partition.
func (k Keys) UISessionGeneration() string { return k.home + keyUISessionGen }

// ackMarkKey is the string a durable trigger call writes right before its
// WAIT, so that the WAIT also covers the runs its duplicates were
// deduplicated to (see durable.go). It is built from the prefix the call
// hands its script, so it lives in the slot of the keys it vouches for.
func ackMarkKey(prefix string) string { return prefix + keyAckMark }

// IdempotencyKeyPattern is a SCAN MATCH pattern for idempotency keys whose
// user-visible part matches glob, in this partition.
func (k Keys) IdempotencyKeyPattern(glob string) string {
	if glob == "" {
		glob = "*"
	}
	return escapeGlob(k.prefix+keyIdempotency) + glob
}

// TrimIdempotencyKey turns a Redis key back into the user-visible idempotency key.
func (k Keys) TrimIdempotencyKey(redisKey string) string {
	return strings.TrimPrefix(redisKey, k.prefix+keyIdempotency)
}

func escapeGlob(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`)
	return r.Replace(s)
}

// NamespacePatterns are SCAN MATCH patterns that together match every key
// of namespace ns, in all its partitions, and no key of another namespace
// (a namespace name holds no '#').
func NamespacePatterns(ns string) []string {
	return []string{escapeGlob("taskq:{"+ns+"}:") + "*", escapeGlob("taskq:{"+ns+"#") + "*"}
}

// RateLimit is the sorted set of the units a rate limit gave out in its
// last period, for one value of its key ("" for a limit without one). It
// lives in the partition RateLimitPartition names, whatever partition k is
// of: use the key builder of that partition.
func (k Keys) RateLimit(name, key string) string { return k.prefix + keyRateLimit + name + ":" + key }
