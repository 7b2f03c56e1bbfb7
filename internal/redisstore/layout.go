package redisstore

// The data layout the store shares with its Lua scripts, declared here once:
// the keys, the fields of the records and stream entries, the order of a
// run's spec, and the KEYS and ARGV of every script. The Go code of the
// package uses these constants; the scripts use the Lua prelude generated
// from this file, lua/layout_gen.lua (run "go generate" after a change):
//
//   - a block marked "//taskq:lua const" becomes Lua constants named after
//     the Go ones in upper snake case (runStatus: RUN_STATUS);
//   - "//taskq:lua keys" becomes key builders taking the namespace's prefix
//     (keyRun: taskq_key_run(prefix, id));
//   - "//taskq:lua spec" becomes taskq_spec, which joins a run's spec;
//   - "//taskq:lua script <name>" becomes constants that only <name>.lua
//     sees, named without the script's prefix (enqueueItemArgRunID:
//     ITEM_ARG_RUN_ID).
//
// A script's header comment names each of its constants with its value, and
// TestScriptHeadersFollowTheLayout holds the two together. Layout constants
// of a script:
//
//	<s>KeyX, <s>ArgX          KEYS[n] and ARGV[n] of the call's header (1-based)
//	<s>KeyCount, <s>ArgCount  how many KEYS and ARGV the header has
//	<s>ItemKeyX, <s>ItemArgX  offsets (0-based) within one item of a script
//	                          that takes any number of items (triggers,
//	                          deliveries, outcomes)
//	<s>ItemKeyCount, ...      KEYS and ARGV per item
//
// Item i's first ARGV is at <s>ArgCount + <s>ItemArgCount*i + 1, and likewise
// for KEYS. The Go side builds them as arrays keyed by these constants.
//
// The store folds the prelude into each script as it loads it (see
// foldLayout): Redis runs the literals and the joined keys. To add a
// script, write lua/<name>.lua with its header, declare its KEYS and ARGV
// here, run go generate, and load it in <name>.go with the modules of
// lua/lib it calls (and list it in allScripts).

//go:generate go run ./internal/layoutgen/cmd/layoutgen -in layout.go -out lua/layout_gen.lua

// Key layout. A namespace has P partitions (recorded in its meta record),
// each a key prefix with a hash tag of its own: partition 0, the home
// partition, is taskq:{ns}:, partition i >= 1 taskq:{ns#<i...>}: (see
// PartitionPrefix). Every key of a partition shares its hash tag, so every
// script, given one partition's prefix, touches a single Redis Cluster
// slot. Keys builds each of them in Go. The keys of this block the scripts
// also build themselves, from the prefix they are given and a run ID or
// task name of a record they read; they share the hash tag. Below,
// taskq:{ns}: stands for the prefix of the partition a key is in.
//
//taskq:lua keys
const (
	keyIdempotency = "key:"     // string  taskq:{ns}:key:<idempotency key>: its owner run ID, expiring per strategy
	keyRun         = "run:"     // hash    taskq:{ns}:run:<run id>: the run record (fields run*)
	keyStream      = "stream:"  // stream  taskq:{ns}:stream:<task>: queued deliveries of a task's runs of the default priority (group GroupName, fields entry*); taskq:{ns}:stream:<task>|p<n> those of priority n (see streamLane)
	keyRetry       = "retry"    // zset    taskq:{ns}:retry: runs waiting for a retry, a debounce window or their scheduled time, by due time (ms)
	keySignals     = "signals:" // stream  taskq:{ns}:signals:<run id>: signals sent to the run, in order (fields signalEntry*)
	keySteps       = "steps:"   // hash    taskq:{ns}:steps:<run id>: results of the run's completed durable steps
	keyDone        = "done:"    // channel taskq:{ns}:done:<run id>: published when a watched run reaches a terminal status
	keyFinished    = "finished" // channel taskq:{ns}:finished: counts of runs that reached a terminal status
	keyCancel      = "cancel"   // channel taskq:{ns}:cancel: IDs of runs cancelled while a worker may hold them
	keyRuns        = "runs"     // zset    taskq:{ns}:runs: runs by creation time (ms), for listing and sweeping
)

// The command a script publishes a notice with, on the channels above:
// PUBLISH, which reaches every node of a cluster. A store on a Redis
// Cluster calls a script's sharded function, which sets it to SPUBLISH
// (see libraryText): a sharded notice goes to the shard of the channel's
// slot only, the one the script runs on, as the channel carries the
// partition's hash tag.
//
//taskq:lua const
const (
	cmdPublish = "PUBLISH" // PUBLISH, or SPUBLISH in a script's sharded function
)

// The partition's suppressed-trigger stream, capped and trimmed by age
// (see suppressed.go).
//
//taskq:lua keys
const (
	keySuppressed = "suppressed" // stream taskq:{ns}:suppressed: triggers that created no run because their key was held (fields suppressed*)
)

// A run's attempt history, in the run's partition like its signals and
// steps, and like them expiring with the record (flag a, see taskq_end).
//
//taskq:lua keys
const (
	keyAttempts = "attempts:" // stream taskq:{ns}:attempts:<run id>: the run's attempts that ended without succeeding, the latest MaxAttemptRecords (fields attemptEntry*)
)

// The children a run spawned (see children.go), in the run's partition
// and expiring with its record (flag d, see taskq_end), and the
// partition's cancelled runs whose children are still to be cancelled
// (taskq_terminate adds a run with children that it cancels).
//
//taskq:lua keys
const (
	keyChildren = "children:" // hash taskq:{ns}:children:<run id>: the run's children by name, each a child record (JSON, see childRecord)
	keyCascades = "cascades"  // zset taskq:{ns}:cascades: cancelled runs whose children are still to be cancelled, by when a worker may take the cascade over (ms)
)

// Keys only Go builds: the scripts that touch them are given them in KEYS.
const (
	keyTasks         = "tasks"        // hash  taskq:{ns}:tasks: registered task definitions by name
	keyEvent         = "event:"       // hash  taskq:{ns}:event:<event id>: an ingested event (fields event*)
	keyEvents        = "events"       // zset  taskq:{ns}:events: events by time (ms)
	keyEventKeyIndex = "eventkey:"    // zset  taskq:{ns}:eventkey:<event key>: the events of one event key, by time (ms)
	keyFanouts       = "fanouts"      // zset  taskq:{ns}:fanouts: events whose fan-out is pending, by when a recoverer may take it over (ms)
	keyEventTrigger  = "evtrig:"      // string taskq:{ns}:evtrig:<event id>:<task>: what an event's fan-out did to the task ("<outcome> <run id>")
	keyWorker        = "worker:"      // hash  taskq:{ns}:worker:<name>: a worker's presence record, expiring once it is long dead
	keyWorkers       = "workers"      // zset  taskq:{ns}:workers: worker records by when each expires (ms)
	keyAckMark       = "ackmark"      // string taskq:{ns}:ackmark: written by each durable trigger call just before its WAIT (see durable.go), expiring
	keyMeta          = "meta"         // hash  taskq:{ns}:meta: the namespace's settings (fields meta*)
	keyRateLimit     = "ratelimit:"   // zset taskq:{ns}:ratelimit:<name>:<key>: the units a rate limit gave out in its last period (members <token> or <token>:<n>, scores unix µs), in the partition of its name and key (see RateLimitPartition)
	keySchedule      = "schedule:"    // hash  taskq:{ns}:schedule:<name>: a cron schedule and its cursor (fields schedule*)
	keySchedules     = "schedules"    // set   taskq:{ns}:schedules: the names of the namespace's cron schedules
	keyUISession     = "uisession:"   // string taskq:{ns}:uisession:<session id>: a live dashboard session, the sign-out generation it began in, expiring with it
	keyUISessionGen  = "uisessiongen" // string taskq:{ns}:uisessiongen: the dashboard's sign-out generation, raised by "sign out everywhere"
	keyPaused        = "paused"       // hash  taskq:{ns}:paused: paused tasks, each with when it was paused (unix ms)
	keyTurns         = "turns"        // hash  taskq:{ns}:turns: per task and lower priority ("<task>|<n>"), how many runs of a higher priority read.lua has read since it last read one of that priority (see read.lua)
	keyEventWaiters  = "waiters:"     // hash  taskq:{ns}:waiters:<event key>: runs whose handlers wait durably for an event of the key (field run id, value "<unix ms registered>:<nonce>"), woken by the next push of the key
	keyEventWaits    = "eventwaits"   // zset  taskq:{ns}:eventwaits: the event keys that have waiters, by when a recoverer last looked at them (ms)
)

// Namespace-wide keys live in the home partition only: keyTasks, keyWorker,
// keyWorkers, keyMeta, keySchedule, keySchedules, keyUISession,
// keyUISessionGen, keyPaused, keyEventWaiters and keyEventWaits. Every other key is per partition: a run, its key,
// signals, steps and notices live in the run's partition (see RunPartition),
// and every partition has its own task streams, retry zset, runs and events
// indexes.

// Fields of the meta record, the hash at taskq:{ns}:meta (home partition).
const (
	metaPartitions = "partitions" // the namespace's partition count, written once when first used
)

// Fields of a schedule record, the hash at taskq:{ns}:schedule:<name>
// (home partition). Times are unix ms.
//
//taskq:lua const
const (
	scheduleDefinition = "def"     // the schedule (JSON, written by the client)
	schedulePaused     = "paused"  // "1" while the schedule is paused, absent otherwise
	scheduleCursor     = "cursor"  // the latest tick fired, or when the schedule was registered or resumed if later
	scheduleCreated    = "created" // when the schedule was first registered
	scheduleUpdated    = "updated" // when its definition was last written
)

// noMeta is a run's metadata when it has none. The trigger scripts do not
// write it to the record or the stream entry (a field fewer costs a
// trigger less), and the store reads an absent field as it.
const noMeta = "{}"

// Fields of the run record, the hash at taskq:{ns}:run:<run id>. Times are
// unix ms, durations ms.
//
//taskq:lua const
const (
	runTask           = "task"     // task name
	runStatus         = "status"   // queued | running | waiting | succeeded | failed | cancelled
	runInput          = "input"    // input (JSON)
	runMeta           = "meta"     // additional metadata (JSON), absent for none (noMeta)
	runIdempotencyKey = "key"      // idempotency key as the user sees it, absent when not deduplicated ("")
	runSpec           = "spec"     // the run's settings: its spec without fails and attempts (see the spec below)
	runEntry          = "entry"    // stream entry ID of the run's delivery ("" while it has none)
	runAttempt        = "attempt"  // the latest attempt begun, the fencing token (absent before the first)
	runFails          = "fails"    // failed attempts (absent before the first)
	runStarted        = "started"  // when the latest attempt began
	runConsumer       = "consumer" // the worker running the latest attempt
	runFinished       = "finished" // when the run ended
	runResult         = "result"   // result (JSON) of a succeeded run
	runError          = "error"    // why the run failed, is retried or was cancelled
	runFlags          = "x"        // one letter per optional part the run has: s signals, t steps, a attempts, w watched, d children
	runRetryOf        = "retryof"  // the run this run retries (set by link_retry.lua)
	runRetriedBy      = "retried"  // the run that retried this run (set by link_retry.lua)
	runWaiting        = "waiting"  // why a queued run is held back before its start ("rate limit \"emails\" key \"acme\""), or what a waiting run waits for ("sleep", "signal"), until it is queued again
	runWaits          = "waits"    // attempts that ended waiting (OutcomeWait), which do not count toward the maximum deliveries (absent before the first)
	runWake           = "wake"     // the attempt a wake (a signal, an event) came during: that attempt's signal or event wait does not wait (absent before the first)
	runPriority       = "prio"     // the run's priority, 2 or 3; absent for the default, 1 (see streamLane)
)

// A task's runs of a priority above the default are queued in a stream of
// their own beside the task's stream, its lane: taskq:{ns}:stream:<task>
// then streamLane then the priority ("|p2", "|p3"). A task name holds no
// '|', so no task's stream is another's lane. Every lane has the consumer
// group (EnsureGroup), and a script that queues a run again picks its lane
// from the record's runPriority (taskq_lane in lua/lib/stream.lua).
//
//taskq:lua const
const (
	streamLane = "|p"
)

// The status of a run whose handler waits durably (engine.StatusWaiting),
// named once as it is also the name of the field runWaiting.
//
//taskq:lua const
const (
	statusWaiting = "waiting"
)

// What a waiting run waits for (runWaiting) starts with one of these when
// a wake (a signal, an event of the key it waits for) ends its wait before
// its due time (engine.WaitSignalPrefix, engine.WaitEventPrefix,
// engine.WaitChildrenPrefix).
//
//taskq:lua const
const (
	waitSignalPrefix   = "signal"
	waitEventPrefix    = "event"
	waitChildrenPrefix = "children"
)

// Fields of a run record written before runSpec held its settings, one
// field each: read only to make such a record's spec (taskq_record_spec in
// lua/lib/record.lua, recordSpec in Go), so that runs queued or running
// across an upgrade start and end as they would have. Once no namespace
// can hold such a record (every one ended and past its retention), these
// fields and that fallback can go.
//
//taskq:lua const
const (
	legacyRunStrategy      = "strat"   // strategy
	legacyRunHold          = "hold"    // hold ms
	legacyRunRetries       = "retries" // retries allowed
	legacyRunTimeout       = "timeout" // handler timeout ms
	legacyRunCreated       = "created" // creation time (unix ms)
	legacyRunMaxDeliveries = "maxdel"  // most deliveries
	legacyRunRetain        = "retain"  // key retain ms
	legacyRunRetention     = "keep"    // record retention ms
)

// Fields of an entry of a task stream (a delivery). A delivery carries what
// its worker needs to run the run and record its outcome, so that the
// start and finish scripts need not read it from the record.
//
//taskq:lua const
const (
	entryRunID          = "r" // run ID
	entryInput          = "i" // input (JSON)
	entryMeta           = "m" // additional metadata (JSON), absent for none (noMeta)
	entryIdempotencyKey = "k" // idempotency key as the user sees it, absent when not deduplicated ("")
	entrySpec           = "o" // the run's spec, see taskq_spec
)

// The spec of a run: its settings, values joined by single spaces in this
// order, every one an integer but the strategy. A run record holds the
// first specSettings of them (field runSpec), and so does the stream entry
// of a run's first delivery (field entrySpec): both are the one value the
// trigger sends, so that a trigger's settings cost Redis one argument and
// one field rather than one per setting. An entry queued again (a retry, a
// requeue) adds the last two, which change between deliveries. None of
// them changes while the run is queued or running, and the run is queued
// again with a new entry, so the entry says what the record would. The
// strategy and the hold come first, where a script reads them
// (taskq_spec_head).
//
//taskq:lua spec
const (
	specStrategy      = iota // strategy: none | ttl | status | debounce
	specHold                 // how long the key is held: the ttl, the fallback ttl, the debounce window (ms)
	specRetries              // retries allowed after handler failures
	specTimeout              // handler timeout ms (0 = none)
	specCreated              // when the run was triggered (unix ms)
	specMaxDeliveries        // most deliveries (0 = no limit)
	specRetain               // how long a status-strategy key is kept after the run ends (ms)
	specRetention            // how long the record is kept after the run ends (ms)
	specFails                // failed attempts before this entry (an entry queued again)
	specAttempts             // attempts begun before this entry (an entry queued again)
	specFieldCount
)

// specSettings is how many values of a spec a run record holds, and a
// run's first delivery: the settings, without specFails and specAttempts.
const specSettings = specFails

// Fields of an entry of a run's signal stream.
//
//taskq:lua const
const (
	signalEntryID      = "id" // signal ID, unique per run
	signalEntryPayload = "p"  // payload (JSON)
)

// Fields of an entry of a run's attempt history (keyAttempts): one entry
// per attempt that ended without succeeding, written by the script that
// learned it ended (finish.lua for a failure or a retry, start.lua for an
// attempt whose lease lapsed and whose delivery was taken over,
// requeue.lua for one given back as its worker shut down). An
// attempt that succeeds, and a run's latest attempt, are in the record
// (runAttempt, runStarted, runConsumer, runFinished), so the success path
// writes nothing here. Times are unix ms.
//
//taskq:lua const
const (
	attemptEntryNumber   = "n" // the attempt's number (runAttempt while it ran)
	attemptEntryOutcome  = "o" // failed (the run failed with it) | retry (a retry was scheduled) | lapsed (its lease lapsed) | requeued (given back at its worker's shutdown)
	attemptEntryBegan    = "b" // when it began
	attemptEntryEnded    = "e" // when it ended (for a lapsed one: when its delivery was taken over)
	attemptEntryConsumer = "c" // the worker that ran it
	attemptEntryError    = "m" // its error message
)

// maxAttemptRecords bounds a run's attempt history: past it, the oldest
// entries are trimmed (XADD MAXLEN), so a run retried without end holds
// its latest maxAttemptRecords attempts. It is engine.MaxAttemptRecords
// (TestLayoutFollowsTheEngine).
//
//taskq:lua const
const maxAttemptRecords = 100

// Fields of an event record, the hash at taskq:{ns}:event:<event id>.
//
//taskq:lua const
const (
	eventKey     = "key"     // the event key
	eventPayload = "payload" // payload (JSON object)
	eventMeta    = "meta"    // additional metadata (JSON object)
	eventCreated = "created" // when the event was pushed (unix ms)
	eventRuns    = "runs"    // what happened to each subscribed task (JSON array of EventRun)
	eventFanout  = "fanout"  // the pending fan-out (JSON, see fanout.go), until the outcomes are in runs
)

// Fields of an entry of the suppressed-trigger stream (keySuppressed). An
// entry holds the triggers of one script call that created no run because
// another run held their key (one, for a trigger sent alone): its source
// once, then one record per trigger, each one value whose parts are
// joined by single spaces, the key last as the only part that may hold a
// space. One entry per call, rather than per trigger, keeps the cost of a
// duplicate within a few percent (see docs/performance.md). The entry's ID
// gives the time.
//
//taskq:lua const
const (
	suppressedSource = "src" // where the call's triggers came from (client | http | cli | event:<event id> | ...)
	suppressedRecord = "rec" // one per trigger: "<outcome> <owner run> <input digest> <task> <key>" (see suppressedOf)
)

// Run statistics: per-minute counters each partition keeps, added to by
// the workers and clients from their in-process counts (AddRunStats in
// stats.go, a pipeline of HINCRBY) and read and summed over the partitions
// by ReadStats. Each partition has a hash per minute, kept about two
// hours, and a hash per ten minutes with the same fields, kept about a
// day, so that a day's chart reads 144 hashes a partition rather than
// 1,440. Every field is "<task>|<kind>" or "<task>|<kind>|<bucket>", its
// value a count; a duration's bucket is a fixed log-scale bucket of its
// milliseconds (StatsBucket in stats.go).
const (
	keyStatsMinute = "stats:m:" // hash taskq:{ns}:stats:m:<unix minute>: the minute's counters (fields <task>|<kind>[|<bucket>]), expiring statsMinuteKeepMs after the minute
	keyStatsCoarse = "stats:c:" // hash taskq:{ns}:stats:c:<unix ms / statsCoarseMs>: the same counters per ten minutes, expiring statsCoarseKeepMs after them
)

// The kinds of a run statistics field, and how long its hashes cover and
// are kept (ms).
const (
	statsWait         = "W"      // <task>|W|<bucket>: an attempt began after waiting in its stream that long (since its entry was added)
	statsSucceeded    = "S"      // <task>|S|<bucket>: an attempt succeeded after running that long
	statsFailed       = "F"      // <task>|F|<bucket>: an attempt failed, its run's last, after running that long
	statsRetried      = "R"      // <task>|R|<bucket>: an attempt failed and its run will be retried, after running that long
	statsDuplicate    = "D"      // <task>|D: a trigger created no run because its key was held
	statsSep          = "|"      // between a field's parts
	statsMinuteMs     = 60000    // a minute hash's span
	statsCoarseMs     = 600000   // a coarse hash's span
	statsMinuteKeepMs = 7200000  // how long a minute hash is kept after its minute
	statsCoarseKeepMs = 93600000 // how long a coarse hash is kept after its span
)

// MaxLingeringEntries bounds the acknowledged entries a task stream keeps
// behind an older delivery still pending (a long-running handler): past
// it, finishing runs deletes their entries at once instead of leaving them
// to be trimmed (see taskq_trim_acked in lua/lib/stream.lua).
//
//taskq:lua const
const MaxLingeringEntries = 10000

// enqueue.lua: triggers, any number per call.
//
//taskq:lua script enqueue
const (
	enqueueKeyRuns          = 1 // runs index taskq:{ns}:runs
	enqueueKeyCount         = 1 // KEYS of a call: the runs index alone (the script builds the triggers' keys)
	enqueueArgPrefix        = 1 // key prefix taskq:{ns}:
	enqueueArgGroup         = 2 // consumer group
	enqueueArgSuppressedCap = 3 // most entries of the partition's suppressed-trigger stream (0: none recorded)
	enqueueArgSource        = 4 // where the call's triggers come from, recorded when one creates no run
	enqueueArgTriggers      = 5 // how many triggers the call carries
	enqueueArgCount         = 5 // ARGV before the first trigger's
)

// enqueue.lua: ARGV of one trigger.
//
//taskq:lua script enqueue
const (
	enqueueItemArgRunID          = iota // run ID
	enqueueItemArgTask                  // task name
	enqueueItemArgInput                 // input (JSON)
	enqueueItemArgMeta                  // additional metadata (JSON)
	enqueueItemArgIdempotencyKey        // idempotency key as the user sees it
	enqueueItemArgSpec                  // the run's settings (a spec of specSettings values)
	enqueueItemArgNow                   // now (unix ms)
	enqueueItemArgPolicy                // conflict policy, and for policy signal the most signals and the signal ID: "signal <max> <id>"
	enqueueItemArgDigest                // input digest, recorded when the trigger creates no run
	enqueueItemArgCount
)

// start.lua: deliveries to begin, any number per call.
//
//taskq:lua script start
const (
	startKeyCount    = 0 // KEYS before the first delivery's: none
	startArgGroup    = 1 // consumer group
	startArgConsumer = 2 // consumer name
	startArgNow      = 3 // now (unix ms)
	startArgPrefix   = 4 // key prefix taskq:{ns}:
	startArgCount    = 4 // ARGV before the first delivery's
)

// start.lua: KEYS of one delivery.
//
//taskq:lua script start
const (
	startItemKeyRun    = iota // run hash
	startItemKeyStream        // task stream
	startItemKeyCount
)

// start.lua: ARGV of one delivery.
//
//taskq:lua script start
const (
	startItemArgRunID         = iota // run ID
	startItemArgEntry                // stream entry ID
	startItemArgMaxDeliveries        // most deliveries, from the entry's spec ("" without one)
	startItemArgRedelivered          // "1" when the entry was delivered before
	startItemArgCount
)

// finish.lua: outcomes of attempts, any number per call.
//
//taskq:lua script finish
const (
	finishKeyRetry    = 1 // retry zset
	finishKeyCount    = 1 // KEYS
	finishArgGroup    = 1 // consumer group
	finishArgPrefix   = 2 // key prefix taskq:{ns}:
	finishArgConsumer = 3 // the worker's consumer name, for the attempts begun here
	finishArgCount    = 3 // ARGV before the first outcome's
)

// finish.lua: ARGV of one outcome.
//
//taskq:lua script finish
const (
	finishItemArgRunID          = iota // run ID
	finishItemArgAttempt               // attempt (fencing token)
	finishItemArgOutcome               // succeeded | failed | "retry <due unix ms>" | "wait <due unix ms>"
	finishItemArgPayload               // result JSON or error message
	finishItemArgNow                   // when the attempt ended (unix ms)
	finishItemArgTask                  // task name, from the delivery, with its lane's suffix for a priority above the default (streamLane); "" to read the record
	finishItemArgEntry                 // stream entry ID, from the delivery
	finishItemArgIdempotencyKey        // the key to release: a status-strategy run's idempotency key, from the delivery ("" for another strategy)
	finishItemArgRetain                // retain ms, from the delivery
	finishItemArgRetention             // record retention ms, from the delivery
	finishItemArgBegan                 // when the handler began, for an attempt begun here ("" otherwise)
	finishItemArgCount
)

// cancel.lua.
//
//taskq:lua script cancel
const (
	cancelKeyRun    = 1 // run hash
	cancelKeyCount  = 1
	cancelArgRunID  = 1 // run ID
	cancelArgNow    = 2 // now (unix ms)
	cancelArgReason = 3 // reason, stored as the run's error
	cancelArgGroup  = 4 // consumer group
	cancelArgPrefix = 5 // key prefix taskq:{ns}:
	cancelArgNotice = 6 // what the cancel notice says after the run ID and a "|" ("" for nothing)
	cancelArgCount  = 6
)

// requeue.lua.
//
//taskq:lua script requeue
const (
	requeueKeyRun     = 1 // run hash
	requeueKeyStream  = 2 // task stream
	requeueKeyCount   = 2
	requeueArgRunID   = 1 // run ID
	requeueArgAttempt = 2 // attempt (fencing token)
	requeueArgGroup   = 3 // consumer group
	requeueArgNow     = 4 // now (unix ms), when the attempt ended
	requeueArgPrefix  = 5 // key prefix taskq:{ns}:
	requeueArgCount   = 5
)

// watch.lua.
//
//taskq:lua script watch
const (
	watchKeyRun   = 1 // run hash
	watchKeyCount = 1
	watchArgCount = 0
)

// read.lua: new deliveries of a partition's task streams, by priority.
//
//taskq:lua script read
const (
	readKeyTurns    = 1 // the partition's turns hash
	readKeyCount    = 1 // KEYS: the turns hash alone (the script builds the streams' keys)
	readArgGroup    = 1 // consumer group
	readArgConsumer = 2 // consumer name
	readArgPrefix   = 3 // key prefix taskq:{ns}:
	readArgWanted   = 4 // most deliveries per task
	readArgBound    = 5 // the starvation bound: runs of a higher priority read before a waiting lower one gets its turn
	readArgCount    = 5 // ARGV before the tasks
)

// read.lua: ARGV of one task.
//
//taskq:lua script read
const (
	readItemArgTask  = iota // task name
	readItemArgCount        // ARGV per task
)

// heartbeat.lua: leases of one task stream, any number per call.
//
//taskq:lua script heartbeat
const (
	heartbeatKeyStream   = 1 // task stream
	heartbeatKeyCount    = 1
	heartbeatArgGroup    = 1 // consumer group
	heartbeatArgConsumer = 2 // consumer name
	heartbeatArgPrefix   = 3 // key prefix taskq:{ns}:
	heartbeatArgCount    = 3 // ARGV before the first lease's
)

// heartbeat.lua: ARGV of one lease.
//
//taskq:lua script heartbeat
const (
	heartbeatItemArgEntry   = iota // stream entry ID
	heartbeatItemArgRunID          // run ID
	heartbeatItemArgAttempt        // attempt (fencing token)
	heartbeatItemArgCount
)

// wake.lua: runs of one partition, any number per call.
//
//taskq:lua script wake
const (
	wakeKeyRetry  = 1 // retry zset
	wakeKeyCount  = 1
	wakeArgPrefix = 1 // key prefix taskq:{ns}:
	wakeArgCount  = 1 // ARGV before the first run's
)

// wake.lua: ARGV of one run.
//
//taskq:lua script wake
const (
	wakeItemArgRunID = iota // run ID
	wakeItemArgCount
)

// promote.lua.
//
//taskq:lua script promote
const (
	promoteKeyRetry  = 1 // retry zset
	promoteKeyCount  = 1
	promoteArgNow    = 1 // now (unix ms)
	promoteArgLimit  = 2 // most runs to move
	promoteArgPrefix = 3 // key prefix taskq:{ns}:
	promoteArgCount  = 3
)

// reschedule.lua.
//
//taskq:lua script reschedule
const (
	rescheduleKeyRun    = 1 // run hash
	rescheduleKeyRetry  = 2 // retry zset
	rescheduleKeyCount  = 2
	rescheduleArgRunID  = 1 // run ID
	rescheduleArgDue    = 2 // new due time (unix ms)
	rescheduleArgPrefix = 3 // key prefix taskq:{ns}:
	rescheduleArgCount  = 3
)

// sweep.lua.
//
//taskq:lua script sweep
const (
	sweepKeyIndex        = 1 // runs or events index
	sweepKeyCount        = 1
	sweepArgCutoff       = 1 // cutoff (unix ms)
	sweepArgOffset       = 2 // offset into the entries before the cutoff
	sweepArgLimit        = 3 // most entries to look at
	sweepArgRecordPrefix = 4 // key prefix of the records (taskq:{ns}:run: or taskq:{ns}:event:)
	sweepArgCount        = 4
)

// release.lua.
//
//taskq:lua script release
const (
	releaseKeyIdempotency = 1 // idempotency key
	releaseKeyCount       = 1
	releaseArgOwner       = 1 // expected owner run ID
	releaseArgCount       = 1
)

// link_retry.lua.
//
//taskq:lua script link_retry
const (
	linkRetryKeyRun   = 1 // run hash
	linkRetryKeyCount = 1
	linkRetryArgField = 1 // the link to write: runRetryOf or runRetriedBy
	linkRetryArgRunID = 2 // the linked run's ID
	linkRetryArgCount = 2
)

// register.lua.
//
//taskq:lua script register
const (
	registerKeyTasks        = 1 // task registry
	registerKeyCount        = 1
	registerArgName         = 1 // task name
	registerArgRegistration = 2 // registration (JSON)
	registerArgMode         = 3 // replace | keep
	registerArgCount        = 3
)

// signal.lua.
//
//taskq:lua script signal
const (
	signalKeyTarget     = 1 // idempotency key (mode key) or run hash (mode run)
	signalKeyCount      = 1
	signalArgMode       = 1 // key | run
	signalArgRunID      = 2 // run ID (mode run)
	signalArgSignalID   = 3 // signal ID
	signalArgPayload    = 4 // payload (JSON)
	signalArgPrefix     = 5 // key prefix taskq:{ns}:
	signalArgMaxSignals = 6 // most signals a run may hold
	signalArgCount      = 6
)

// save_step.lua.
//
//taskq:lua script save_step
const (
	saveStepKeySteps  = 1 // steps hash
	saveStepKeyRun    = 2 // run hash
	saveStepKeyCount  = 2
	saveStepArgName   = 1 // step name
	saveStepArgResult = 2 // result (JSON)
	saveStepArgCount  = 2
)

// ensure_group.lua.
//
//taskq:lua script ensure_group
const (
	ensureGroupKeyStream = 1 // task stream
	ensureGroupKeyCount  = 1
	ensureGroupArgGroup  = 1 // consumer group
	ensureGroupArgCount  = 1
)

// push_event.lua: one event and its subscribed tasks.
//
//taskq:lua script push_event
const (
	pushEventKeyEvent         = 1 // event hash
	pushEventKeyEvents        = 2 // events index
	pushEventKeyEventKeyIndex = 3 // events-by-key index
	pushEventKeyRuns          = 4 // runs index
	pushEventKeyCount         = 4
	pushEventArgEventID       = 1  // event ID
	pushEventArgEventKey      = 2  // event key
	pushEventArgPayload       = 3  // payload (JSON object), every run's input
	pushEventArgMeta          = 4  // metadata (JSON object), every run's
	pushEventArgNow           = 5  // now (unix ms)
	pushEventArgRetention     = 6  // event retention ms
	pushEventArgPrefix        = 7  // key prefix taskq:{ns}:
	pushEventArgTaskCount     = 8  // how many subscribed tasks follow
	pushEventArgSource        = 9  // "event:<event id>", recorded for a task deduplicated
	pushEventArgDigest        = 10 // payload digest, recorded for a task deduplicated
	pushEventArgSuppressedCap = 11 // most entries of the suppressed-trigger stream (0: none recorded)
	pushEventArgCount         = 11 // ARGV before the first task's
)

// push_event.lua: ARGV of one subscribed task.
//
//taskq:lua script push_event
const (
	pushEventItemArgTask           = iota // task name
	pushEventItemArgRunID                 // run ID
	pushEventItemArgIdempotencyKey        // idempotency key ("" when not deduplicated)
	pushEventItemArgSpec                  // the run's settings (a spec of specSettings values)
	pushEventItemArgError                 // why no run is attempted ("" to attempt one)
	pushEventItemArgCount
)

// store_event.lua: step 1 of a fan-out in steps, the event and its pending
// fan-out.
//
//taskq:lua script store_event
const (
	storeEventKeyEvent         = 1 // event hash
	storeEventKeyEvents        = 2 // events index
	storeEventKeyEventKeyIndex = 3 // events-by-key index
	storeEventKeyFanouts       = 4 // pending fan-outs
	storeEventKeyCount         = 4
	storeEventArgEventID       = 1 // event ID
	storeEventArgEventKey      = 2 // event key
	storeEventArgPayload       = 3 // payload (JSON object)
	storeEventArgMeta          = 4 // metadata (JSON object)
	storeEventArgNow           = 5 // now (unix ms)
	storeEventArgRetention     = 6 // event retention ms
	storeEventArgFanout        = 7 // the pending fan-out (JSON)
	storeEventArgCount         = 7
)

// trigger_event.lua: step 2, the triggers of an event's tasks whose runs
// live under one prefix, any number per call.
//
//taskq:lua script trigger_event
const (
	triggerEventKeyCount         = 0 // KEYS before the first task's: none
	triggerEventArgPrefix        = 1 // key prefix of the tasks' runs
	triggerEventArgPayload       = 2 // payload (JSON object), every run's input
	triggerEventArgMeta          = 3 // metadata (JSON object), every run's
	triggerEventArgNow           = 4 // the event's time (unix ms), every run's creation time
	triggerEventArgRetention     = 5 // event retention ms, the markers'
	triggerEventArgSource        = 6 // "event:<event id>", recorded for a task deduplicated
	triggerEventArgDigest        = 7 // payload digest, recorded for a task deduplicated
	triggerEventArgSuppressedCap = 8 // most entries of the suppressed-trigger stream (0: none recorded)
	triggerEventArgCount         = 8 // ARGV before the first task's
)

// trigger_event.lua: KEYS of one task.
//
//taskq:lua script trigger_event
const (
	triggerEventItemKeyMarker      = iota // what the fan-out did to the task
	triggerEventItemKeyRun                // run hash
	triggerEventItemKeyStream             // task stream
	triggerEventItemKeyRuns               // runs index
	triggerEventItemKeyIdempotency        // idempotency key (the runs index again under strategy none)
	triggerEventItemKeyCount
)

// trigger_event.lua: ARGV of one task.
//
//taskq:lua script trigger_event
const (
	triggerEventItemArgTask           = iota // task name
	triggerEventItemArgRunID                 // run ID
	triggerEventItemArgIdempotencyKey        // idempotency key ("" when not deduplicated)
	triggerEventItemArgSpec                  // the run's settings (a spec of specSettings values)
	triggerEventItemArgCount
)

// record_event.lua: step 3, the outcomes of a fan-out.
//
//taskq:lua script record_event
const (
	recordEventKeyEvent   = 1 // event hash
	recordEventKeyFanouts = 2 // pending fan-outs
	recordEventKeyCount   = 2
	recordEventArgEventID = 1 // event ID
	recordEventArgRuns    = 2 // every task's outcome (JSON array of EventRun)
	recordEventArgCount   = 2
)

// take_fanouts.lua: pending fan-outs a recoverer takes over.
//
//taskq:lua script take_fanouts
const (
	takeFanoutsKeyFanouts     = 1 // pending fan-outs
	takeFanoutsKeyCount       = 1
	takeFanoutsArgCutoff      = 1 // take those last taken (or stored) at or before it (unix ms)
	takeFanoutsArgNow         = 2 // now (unix ms)
	takeFanoutsArgLimit       = 3 // most fan-outs to take
	takeFanoutsArgEventPrefix = 4 // key prefix of the event records (taskq:{ns}:event:)
	takeFanoutsArgCount       = 4
)

// ratelimit_take.lua: requests for units of rate limits, any number per call.
//
//taskq:lua script ratelimit_take
const (
	ratelimitTakeKeyCount = 0 // KEYS before the first request's: none
	ratelimitTakeArgNow   = 1 // now (unix µs), or "" for the server's clock
	ratelimitTakeArgCount = 1 // ARGV before the first request's
)

// ratelimit_take.lua: KEYS of one request.
//
//taskq:lua script ratelimit_take
const (
	ratelimitTakeItemKeyLimit = iota // the limit's log
	ratelimitTakeItemKeyCount
)

// ratelimit_take.lua: ARGV of one request.
//
//taskq:lua script ratelimit_take
const (
	ratelimitTakeItemArgToken  = iota // token unique to the request
	ratelimitTakeItemArgUnits         // units to take
	ratelimitTakeItemArgLimit         // most units in any period
	ratelimitTakeItemArgPeriod        // the period (µs)
	ratelimitTakeItemArgCount
)

// ratelimit_return.lua: units given back, any number of requests per call.
//
//taskq:lua script ratelimit_return
const (
	ratelimitReturnKeyCount = 0 // KEYS before the first request's: none
	ratelimitReturnArgCount = 0 // ARGV before the first request's: none
)

// ratelimit_return.lua: KEYS of one request.
//
//taskq:lua script ratelimit_return
const (
	ratelimitReturnItemKeyLimit = iota // the limit's log
	ratelimitReturnItemKeyCount
)

// ratelimit_return.lua: ARGV of one request.
//
//taskq:lua script ratelimit_return
const (
	ratelimitReturnItemArgToken = iota // the token the units were taken with
	ratelimitReturnItemArgUnits        // units taken
	ratelimitReturnItemArgCount
)

// ratelimit_defer.lua: deliveries held back by a rate limit, any number
// per call.
//
//taskq:lua script ratelimit_defer
const (
	ratelimitDeferKeyRetry = 1 // retry zset
	ratelimitDeferKeyCount = 1 // KEYS before the first delivery's
	ratelimitDeferArgGroup = 1 // consumer group
	ratelimitDeferArgCount = 1 // ARGV before the first delivery's
)

// ratelimit_defer.lua: KEYS of one delivery.
//
//taskq:lua script ratelimit_defer
const (
	ratelimitDeferItemKeyRun    = iota // run hash
	ratelimitDeferItemKeyStream        // task stream
	ratelimitDeferItemKeyCount
)

// ratelimit_defer.lua: ARGV of one delivery.
//
//taskq:lua script ratelimit_defer
const (
	ratelimitDeferItemArgRunID  = iota // run ID
	ratelimitDeferItemArgEntry         // stream entry ID of the delivery
	ratelimitDeferItemArgDue           // when to queue the run again (unix ms)
	ratelimitDeferItemArgReason        // why it waits (the run's waiting field)
	ratelimitDeferItemArgCount
)

// save_schedule.lua: registers a cron schedule.
//
//taskq:lua script save_schedule
const (
	saveScheduleKeySchedule   = 1 // schedule hash
	saveScheduleKeySchedules  = 2 // schedules index
	saveScheduleKeyCount      = 2
	saveScheduleArgName       = 1 // schedule name
	saveScheduleArgDefinition = 2 // the schedule (JSON)
	saveScheduleArgMode       = 3 // create | replace
	saveScheduleArgPaused     = 4 // "1" to register a new schedule paused
	saveScheduleArgNow        = 5 // now (unix ms)
	saveScheduleArgCount      = 5
)

// pause_schedule.lua: pauses or resumes a cron schedule.
//
//taskq:lua script pause_schedule
const (
	pauseScheduleKeySchedule = 1 // schedule hash
	pauseScheduleKeyCount    = 1
	pauseScheduleArgPaused   = 1 // "1" to pause, "0" to resume
	pauseScheduleArgNow      = 2 // now (unix ms)
	pauseScheduleArgCount    = 2
)

// delete_schedule.lua: deletes a cron schedule and its cursor.
//
//taskq:lua script delete_schedule
const (
	deleteScheduleKeySchedule  = 1 // schedule hash
	deleteScheduleKeySchedules = 2 // schedules index
	deleteScheduleKeyCount     = 2
	deleteScheduleArgName      = 1 // schedule name
	deleteScheduleArgCount     = 1
)

// advance_schedule.lua: moves a schedule's cursor to a tick fired.
//
//taskq:lua script advance_schedule
const (
	advanceScheduleKeySchedule = 1 // schedule hash
	advanceScheduleKeyCount    = 1
	advanceScheduleArgTick     = 1 // the tick fired (unix ms)
	advanceScheduleArgCount    = 1
)

// Concurrency groups (see concurrency.go). A group's state lives in one
// partition, the one its task and group name hash to
// (ConcurrencyPartition): the runs holding its slots, what each holder is,
// and the runs waiting for a slot. A run held back (parked) stays in its
// own partition, out of its task stream, listed in the partition's parked
// index until a slot is free for it.
const (
	keyConcurrencyHolders = "conc:h:" // zset taskq:{ns}:conc:h:<task>[#<limit>]|<group>: runs holding a slot of the group, by lease deadline (ms)
	keyConcurrencyOwners  = "conc:o:" // hash taskq:{ns}:conc:o:<task>[#<limit>]|<group>: each holder's "<acquired ms> <token>" (token "" while reserved)
	keyConcurrencyWaiting = "conc:w:" // zset taskq:{ns}:conc:w:<task>[#<limit>]|<group>: runs waiting for a slot, by creation time (ms)
	keyParked             = "parked"  // zset taskq:{ns}:parked: runs parked by their concurrency group, by when a recoverer next looks at them (ms)
)

// Fields of a parked run's record.
//
//taskq:lua const
const (
	runConcurrencyGroup = "cgroup" // the concurrency group a parked run waits in (absent once it is back in its stream)
	runConcurrencyLimit = "climit" // which of its task's concurrency limits that group is of (its index; absent for the first)
)

// concurrency_acquire.lua: slots asked for by deliveries, any number per
// call, each with its group's keys (all of one partition).
//
//taskq:lua script concurrency_acquire
const (
	concurrencyAcquireKeyCount = 0 // KEYS before the first item's: none
	concurrencyAcquireArgNow   = 1 // now (unix ms)
	concurrencyAcquireArgCount = 1 // ARGV before the first item's
)

// concurrency_acquire.lua: KEYS of one item.
//
//taskq:lua script concurrency_acquire
const (
	concurrencyAcquireItemKeyHolders = iota // the group's holders
	concurrencyAcquireItemKeyOwners         // the group's owners
	concurrencyAcquireItemKeyWaiting        // the group's waiting runs
	concurrencyAcquireItemKeyCount
)

// concurrency_acquire.lua: ARGV of one item.
//
//taskq:lua script concurrency_acquire
const (
	concurrencyAcquireItemArgRunID    = iota // run ID
	concurrencyAcquireItemArgToken           // the holder's token (worker and delivery)
	concurrencyAcquireItemArgMaxRuns         // most runs of the group at once
	concurrencyAcquireItemArgStrategy        // group_round_robin | cancel_in_progress | cancel_newest
	concurrencyAcquireItemArgLease           // lease ms of the slot
	concurrencyAcquireItemArgCreated         // the run's creation time (unix ms), its place in the waiting line
	concurrencyAcquireItemArgCount
)

// concurrency_release.lua: slots given back, any number per call.
//
//taskq:lua script concurrency_release
const (
	concurrencyReleaseKeyCount = 0 // KEYS before the first item's: none
	concurrencyReleaseArgNow   = 1 // now (unix ms)
	concurrencyReleaseArgCount = 1 // ARGV before the first item's
)

// concurrency_release.lua: KEYS of one item.
//
//taskq:lua script concurrency_release
const (
	concurrencyReleaseItemKeyHolders = iota // the group's holders
	concurrencyReleaseItemKeyOwners         // the group's owners
	concurrencyReleaseItemKeyWaiting        // the group's waiting runs
	concurrencyReleaseItemKeyCount
)

// concurrency_release.lua: ARGV of one item.
//
//taskq:lua script concurrency_release
const (
	concurrencyReleaseItemArgRunID   = iota // run ID ("" to only hand free slots to waiting runs)
	concurrencyReleaseItemArgToken          // the holder's token
	concurrencyReleaseItemArgMaxRuns        // most runs of the group at once
	concurrencyReleaseItemArgReserve        // how long a slot is reserved for a waiting run (ms)
	concurrencyReleaseItemArgCount
)

// concurrency_renew.lua: slot leases renewed, any number per call.
//
//taskq:lua script concurrency_renew
const (
	concurrencyRenewKeyCount = 0 // KEYS before the first item's: none
	concurrencyRenewArgNow   = 1 // now (unix ms)
	concurrencyRenewArgCount = 1 // ARGV before the first item's
)

// concurrency_renew.lua: KEYS of one item.
//
//taskq:lua script concurrency_renew
const (
	concurrencyRenewItemKeyHolders = iota // the group's holders
	concurrencyRenewItemKeyOwners         // the group's owners
	concurrencyRenewItemKeyCount
)

// concurrency_renew.lua: ARGV of one item.
//
//taskq:lua script concurrency_renew
const (
	concurrencyRenewItemArgRunID = iota // run ID
	concurrencyRenewItemArgToken        // the holder's token
	concurrencyRenewItemArgLease        // lease ms from now
	concurrencyRenewItemArgCount
)

// concurrency_park.lua: deliveries held back by their group, any number
// per call (all of one partition).
//
//taskq:lua script concurrency_park
const (
	concurrencyParkKeyParked  = 1 // parked index
	concurrencyParkKeyCount   = 1 // KEYS before the first item's
	concurrencyParkArgGroup   = 1 // consumer group
	concurrencyParkArgRecheck = 2 // when a recoverer first looks at the runs (unix ms)
	concurrencyParkArgCount   = 2 // ARGV before the first item's
)

// concurrency_park.lua: KEYS of one item.
//
//taskq:lua script concurrency_park
const (
	concurrencyParkItemKeyRun    = iota // run hash
	concurrencyParkItemKeyStream        // task stream
	concurrencyParkItemKeyCount
)

// concurrency_park.lua: ARGV of one item.
//
//taskq:lua script concurrency_park
const (
	concurrencyParkItemArgRunID     = iota // run ID
	concurrencyParkItemArgEntry            // stream entry ID of the delivery
	concurrencyParkItemArgReason           // why it waits, stored in the record
	concurrencyParkItemArgGroupName        // the concurrency group
	concurrencyParkItemArgLimit            // which of the task's concurrency limits the group is of (its index)
	concurrencyParkItemArgCount
)

// concurrency_unpark.lua: parked runs given a slot, back to their task
// streams, any number per call (all of one partition).
//
//taskq:lua script concurrency_unpark
const (
	concurrencyUnparkKeyParked = 1 // parked index
	concurrencyUnparkKeyCount  = 1 // KEYS before the first item's
	concurrencyUnparkArgCount  = 0 // ARGV before the first item's
)

// concurrency_unpark.lua: KEYS of one item.
//
//taskq:lua script concurrency_unpark
const (
	concurrencyUnparkItemKeyRun    = iota // run hash
	concurrencyUnparkItemKeyStream        // task stream
	concurrencyUnparkItemKeyCount
)

// concurrency_unpark.lua: ARGV of one item.
//
//taskq:lua script concurrency_unpark
const (
	concurrencyUnparkItemArgRunID = iota // run ID
	concurrencyUnparkItemArgCount
)

// take_parked.lua: parked runs a recoverer looks at.
//
//taskq:lua script take_parked
const (
	takeParkedKeyParked = 1 // parked index
	takeParkedKeyCount  = 1
	takeParkedArgNow    = 1 // now (unix ms): runs due at or before it are taken
	takeParkedArgNext   = 2 // when the runs taken are due again (unix ms)
	takeParkedArgLimit  = 3 // most runs to take
	takeParkedArgPrefix = 4 // key prefix taskq:{ns}:
	takeParkedArgCount  = 4
)

// record_children.lua: the children of one run.
//
//taskq:lua script record_children
const (
	recordChildrenKeyChildren = 1 // children hash
	recordChildrenKeyRun      = 2 // run hash
	recordChildrenKeyCount    = 2
	recordChildrenArgMode     = 1 // record | mark
	recordChildrenArgCount    = 1 // ARGV before the first child's
)

// record_children.lua: ARGV of one child.
//
//taskq:lua script record_children
const (
	recordChildrenItemArgName   = iota // the child's name
	recordChildrenItemArgRecord        // the child's record (JSON)
	recordChildrenItemArgCount
)

// forget_waiters.lua: registrations of runs waiting for an event, removed
// if unchanged, any number per call (all in the home partition).
//
//taskq:lua script forget_waiters
const (
	forgetWaitersKeyIndex = 1 // event keys with waiters
	forgetWaitersKeyCount = 1 // KEYS before the first item's
	forgetWaitersArgCount = 0 // ARGV before the first item's: none
)

// forget_waiters.lua: KEYS of one item.
//
//taskq:lua script forget_waiters
const (
	forgetWaitersItemKeyWaiters = iota // the event key's registrations
	forgetWaitersItemKeyCount
)

// forget_waiters.lua: ARGV of one item.
//
//taskq:lua script forget_waiters
const (
	forgetWaitersItemArgEventKey     = iota // the event key, its member in the index
	forgetWaitersItemArgRunID               // the run ("": only drop the key from the index when it has no waiters)
	forgetWaitersItemArgRegistration        // the registration as read
	forgetWaitersItemArgCount
)

// take_cascades.lua: cancelled runs whose children a recoverer cancels.
//
//taskq:lua script take_cascades
const (
	takeCascadesKeyCascades = 1 // cascades index
	takeCascadesKeyCount    = 1
	takeCascadesArgCutoff   = 1 // take those last taken (or added) at or before it (unix ms)
	takeCascadesArgNow      = 2 // now (unix ms), their new time
	takeCascadesArgLimit    = 3 // most cascades to take
	takeCascadesArgPrefix   = 4 // key prefix taskq:{ns}:
	takeCascadesArgCount    = 4
)
