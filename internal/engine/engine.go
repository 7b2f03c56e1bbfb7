// Package engine is the contract between taskq and its storage: what the
// client, the worker, event ingestion, admission, the HTTP API and the
// dashboard need from a store, in the store's own neutral terms (triggers,
// deliveries, outcomes, runs, keys) and with its own error kinds. Package
// redisstore is the one implementation today; a connection made through
// internal/connect picks it. Nothing above this package names Redis.
//
// Every batch operation takes its items in one slice and answers with one
// result and one error per item, in order: an item's error never fails its
// neighbours. Methods that take a time take the caller's clock (the zero
// time asks the store for its own where noted), so tests can move time.
package engine

import (
	"context"
	"time"
)

// Engine is everything taskq asks of a store. It is the union of the
// smaller contracts below, each of which a consumer may ask for alone.
type Engine interface {
	Triggers
	Deliveries
	Runs
	Children
	Keys
	Events
	Schedules
	Controls
	Workers
	Stats
	Sessions
	Namespace
}

// Triggers writes new runs.
type Triggers interface {
	// EnqueueBatch writes a run for each trigger its idempotency key
	// admits, or answers with the run that holds the key; the i-th result
	// answers ps[i]. It sets each trigger's RunID in place to the ID the
	// run got (naming its partition), which the caller reads back. A
	// trigger sent again with its RunID after a lost reply is answered
	// with its first outcome, or ErrRunExists where that cannot be told.
	EnqueueBatch(ctx context.Context, ps []*EnqueueParams) ([]EnqueueResult, []error)
	// PlaceRuns sets each trigger's RunID in place to the ID EnqueueBatch
	// would give its run, naming its partition, and writes nothing: for a
	// caller that records a run's ID before creating it (a parent its
	// child's, see Children). Placing a trigger again changes nothing.
	PlaceRuns(ctx context.Context, ps []*EnqueueParams) error
	// Enqueue is EnqueueBatch of one trigger.
	Enqueue(ctx context.Context, p *EnqueueParams) (EnqueueResult, error)
	// CheckDurability reports whether the store can give the
	// acknowledgement d asks for.
	CheckDurability(ctx context.Context, d Durability) error
	// LinkRetry records retry as the run that retries run of, once:
	// existing is the retry recorded before, if any.
	LinkRetry(ctx context.Context, of, retry string) (existing string, err error)
}

// Deliveries hands queued runs to workers and records what became of them.
type Deliveries interface {
	// EnsureGroup prepares task's queues in every partition for reading;
	// ReadGroup and AutoClaim of a task need it first.
	EnsureGroup(ctx context.Context, task string) error
	// ReadGroup reads up to count new deliveries of tasks in partition
	// part for consumer, waiting up to block for the first (a negative
	// block does not wait, zero waits without end).
	ReadGroup(ctx context.Context, part int, consumer string, tasks []string, count int, block time.Duration) ([]Delivery, error)
	// ReadByPriority reads up to count new deliveries of each of tasks in
	// partition part for consumer, each task's in priority order with
	// the lower priorities' turns (see Priority), bound the starvation
	// bound (PriorityBound); it does not wait. more says a priority above
	// the default may hold runs still: read with it again rather than
	// with ReadGroup, which takes from every priority at once.
	ReadByPriority(ctx context.Context, part int, consumer string, tasks []string, count, bound int) (ds []Delivery, more bool, err error)
	// AutoClaim takes over up to count deliveries of task in partition
	// part whose consumer has been idle for minIdle.
	AutoClaim(ctx context.Context, part int, task, consumer string, minIdle time.Duration, count int) ([]Delivery, error)
	// StartBatch begins the attempt of each delivery.
	StartBatch(ctx context.Context, consumer string, now time.Time, ds []Delivery) ([]StartResult, []error)
	// FinishBatch records each attempt's outcome.
	FinishBatch(ctx context.Context, ps []*FinishParams) ([]FinishResult, []error)
	// Heartbeat extends the leases consumer holds on deliveries of task.
	Heartbeat(ctx context.Context, task, consumer string, leases []Lease) ([]LeaseReport, error)
	// Requeue hands a delivery back unstarted, for another worker.
	Requeue(ctx context.Context, runID, task string, attempt int) (FinishResult, error)
	// PromoteDue moves the runs of partition part due by now (retries,
	// scheduled runs, debounce windows) to their queues: at most limit;
	// next is the earliest still waiting.
	PromoteDue(ctx context.Context, part int, now time.Time, limit int) (moved int, next time.Time, err error)
	// SaveStepResult records a durable step's result once; a step saved
	// before answers with the result saved first. For a run that does not
	// exist it stores nothing and answers with result.
	SaveStepResult(ctx context.Context, runID, name string, result []byte) ([]byte, error)
	// StepResult reads a durable step's result.
	StepResult(ctx context.Context, runID, name string) ([]byte, bool, error)
	// ReadSignals reads up to count signals of a run after cursor ("" or
	// "0": from the first; else a Signal's ID), waiting up to block for
	// the first as ReadGroup does. A cursor of another form is
	// ErrInvalidCursor.
	ReadSignals(ctx context.Context, runID, cursor string, count int, block time.Duration) ([]Signal, error)
	// CancelTopics are the topics (Notices) that announce runs
	// cancelled while a worker may hold them, one per partition.
	CancelTopics(ctx context.Context) ([]string, error)
}

// Runs reads and changes runs.
type Runs interface {
	// GetRun reads a run; ErrRunNotFound when there is none.
	GetRun(ctx context.Context, id string) (*Run, error)
	// GetRuns reads runs in order, nil for a missing one, with the time
	// each falls due when it waits for a retry, a debounce window or its
	// scheduled time (zero otherwise).
	GetRuns(ctx context.Context, ids []string) ([]*Run, []time.Time, error)
	// RunStatus reads a run's status alone.
	RunStatus(ctx context.Context, id string) (string, error)
	// RunStates reads what cancelling or retrying needs of each run.
	RunStates(ctx context.Context, ids []string) ([]RunState, error)
	// RunTaskStatuses reads each run's task and status.
	RunTaskStatuses(ctx context.Context, ids []string) ([]RunTaskStatus, error)
	// ReadParts reads a run's attempts, steps and signals.
	ReadParts(ctx context.Context, r *Run) (Parts, error)
	// ReadAttempts reads a run's recorded attempts.
	ReadAttempts(ctx context.Context, runID string) ([]Attempt, error)
	// ScanSteps pages through a run's durable steps.
	ScanSteps(ctx context.Context, runID string, cursor uint64, count int) ([]Step, uint64, error)
	// ListRunIDs lists run IDs newest first.
	ListRunIDs(ctx context.Context, offset, limit int64) ([]string, error)
	// PageRuns pages through the runs index newest first, after a
	// position.
	PageRuns(ctx context.Context, after *IndexEntry, limit int) ([]IndexEntry, error)
	// IndexedRuns counts the runs index.
	IndexedRuns(ctx context.Context) (int64, error)
	// Cancel cancels a run that has not ended.
	Cancel(ctx context.Context, runID, reason string, now time.Time) (FinishResult, error)
	// CancelWithNotice is Cancel that also publishes notice to the
	// worker holding the run.
	CancelWithNotice(ctx context.Context, runID, reason, notice string, now time.Time) (FinishResult, error)
	// Reschedule moves a scheduled run's due time.
	Reschedule(ctx context.Context, runID string, due time.Time) (RescheduleResult, error)
	// SignalRun appends a signal to a run once per signalID.
	SignalRun(ctx context.Context, runID, signalID string, payload []byte, maxSignals int) (SignalResult, error)
	// WatchRun reads a run's status for a waiter.
	WatchRun(ctx context.Context, id string) (string, error)
	// DoneTopic is the topic (Notices) that announces runID's end.
	DoneTopic(ctx context.Context, runID string) (string, error)
	// Notices opens a subscription to topics.
	Notices() Notices
	// SubscribeFinished opens a subscription to the counts of runs that
	// reached a terminal status, on every partition.
	SubscribeFinished(ctx context.Context) (n Notices, channels int, err error)
	// SweepRuns removes the index entries of partition part's runs that
	// ended before cutoff and expired.
	SweepRuns(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error)
}

// Children records the runs a run spawns (its children, see Child) and
// cancels them with it.
type Children interface {
	// RecordChildren records each child of parent under its name unless
	// one is recorded under that name already, and answers with the
	// record kept for each, in order: the first record of a name wins. A
	// parent that has ended records nothing and is ErrRunEnded, one
	// without a record ErrRunNotFound.
	RecordChildren(ctx context.Context, parent string, cs []Child) ([]Child, error)
	// MarkChildrenCreated records that the children cs (recorded before,
	// and named as then) were created, whether or not parent has ended.
	MarkChildrenCreated(ctx context.Context, parent string, cs []Child) error
	// ReadChildren reads every child parent recorded (SortChildren
	// order); none for a run without children or without a record.
	ReadChildren(ctx context.Context, parent string) ([]Child, error)
	// CancelChildren cancels the children of parent, a run that was
	// cancelled, but for the detached ones; and the children of each
	// child it cancels, and so on down. Cancelling a child that has ended
	// changes nothing. A cancelled run whose cascade is done (no child
	// recorded but not yet created) leaves the store's cascades.
	CancelChildren(ctx context.Context, parent string, now time.Time) (CascadeResult, error)
	// RecoverCascades finishes up to limit cascades per partition that
	// their canceller left pending for grace (it died, or the run was
	// cancelled by a script: superseded, or by its concurrency group),
	// and gives up on those whose children were recorded but never
	// created within SpawnGrace of the cancel.
	RecoverCascades(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, done int, err error)
}

// Keys reads and acts on idempotency keys and suppressed triggers.
type Keys interface {
	// GetKey reads the state of an idempotency key; held is false for a
	// key no run holds.
	GetKey(ctx context.Context, key string) (KeyState, bool, error)
	// GetKeys is GetKey of many keys.
	GetKeys(ctx context.Context, keys []string) (states []KeyState, held []bool, err error)
	// ScanKeys pages through the held keys matching glob.
	ScanKeys(ctx context.Context, glob, cursor string, count int64) ([]string, string, error)
	// ReleaseKey releases key if owner still holds it.
	ReleaseKey(ctx context.Context, key, owner string) (bool, error)
	// SignalKey signals the run holding key.
	SignalKey(ctx context.Context, key, signalID string, payload []byte, maxSignals int) (SignalResult, error)
	// ListSuppressed pages through the triggers that created no run.
	ListSuppressed(ctx context.Context, q SuppressedQuery) ([]Suppressed, string, error)
	// SetSuppressedLimits sets how many suppressed triggers are kept and
	// for how long.
	SetSuppressedLimits(l SuppressedLimits)
	// SuppressedLimits are the limits SetSuppressedLimits set.
	SuppressedLimits() SuppressedLimits
	// TrimSuppressed removes partition part's suppressed triggers before
	// cutoff.
	TrimSuppressed(ctx context.Context, part int, cutoff time.Time) (int64, error)
}

// Events stores events and fans them out to the tasks that subscribe.
type Events interface {
	// PushEvents stores each event and triggers its tasks' runs. Like
	// EnqueueBatch it sets the event's ID and its runs' IDs in place to
	// name their partitions; an event sent again is answered with its
	// first outcome, or ErrEventExists where that cannot be told.
	PushEvents(ctx context.Context, ps []*PushEventParams) ([][]EventRun, []error)
	// PushEvent is PushEvents of one event.
	PushEvent(ctx context.Context, p *PushEventParams) ([]EventRun, error)
	// GetEvent reads an event; ErrEventNotFound when there is none.
	GetEvent(ctx context.Context, id string) (*Event, error)
	// GetEvents reads events in order; missing ones are left out.
	GetEvents(ctx context.Context, ids []string) ([]*Event, error)
	// ListEventIDs lists the IDs of events with key (all for ""), newest
	// first.
	ListEventIDs(ctx context.Context, key string, offset, limit int64) ([]string, error)
	// PageEvents pages through the events index newest first.
	PageEvents(ctx context.Context, eventKey string, after *IndexEntry, limit int) ([]IndexEntry, error)
	// IndexedEvents counts the events index (of key, or all for "").
	IndexedEvents(ctx context.Context, eventKey string) (int64, error)
	// SweepEvents removes partition part's events stored before cutoff.
	SweepEvents(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error)
	// RecoverFanouts finishes up to limit fan-outs left pending for grace
	// by the process that pushed their events.
	RecoverFanouts(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, finished int, err error)
	// SetFanoutHooks installs the hooks a fan-out calls: for tests and
	// fault tooling that stop a fan-out between its steps.
	SetFanoutHooks(h *FanoutHooks)
	// AddEventWaiter registers runID as waiting durably for the next event
	// of eventKey, as of now (a later registration of the run replaces
	// it).
	AddEventWaiter(ctx context.Context, eventKey, runID string, now time.Time) error
	// EventWaiters reads the registrations for an event of any of
	// eventKeys: whoever pushed the events wakes their runs (WakeRuns),
	// then forgets them (ForgetEventWaiters).
	EventWaiters(ctx context.Context, eventKeys []string) ([]EventWaiter, error)
	// ForgetEventWaiters removes the registrations ws that are still as
	// read: a run that registered again since keeps its newer one.
	ForgetEventWaiters(ctx context.Context, ws []EventWaiter) error
	// RecoverEventWaiters wakes and forgets the registrations, of up to
	// limit event keys, that an event of their key older than grace came
	// after (its pusher died before it woke them): taken counts the keys
	// looked at, woken the runs woken.
	RecoverEventWaiters(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, woken int, err error)
	// WakeRuns wakes runs whose handlers wait for a signal, an event or
	// their children (StatusWaiting with such a Waiting: queued again at
	// once) or may be about to (a wake during an attempt ends that
	// attempt's wait of those kinds before it waits). Missing, ended and
	// sleeping runs are left alone.
	WakeRuns(ctx context.Context, runIDs []string) error
}

// Schedules stores cron schedules and their cursors.
type Schedules interface {
	SaveSchedule(ctx context.Context, name string, definition []byte, replace, paused bool, now time.Time) (written bool, previous []byte, err error)
	GetSchedule(ctx context.Context, name string) (*ScheduleRecord, error)
	ListSchedules(ctx context.Context) ([]ScheduleRecord, error)
	DeleteSchedule(ctx context.Context, name string) (bool, error)
	SetSchedulePaused(ctx context.Context, name string, paused bool, now time.Time) (bool, error)
	// AdvanceSchedule moves a schedule's cursor forward to tick, never
	// back: cursor is the cursor after the call (a later one another
	// scheduler set stays), and ok is false only when the schedule is
	// gone.
	AdvanceSchedule(ctx context.Context, name string, tick time.Time) (cursor time.Time, ok bool, err error)
}

// Controls are the concurrency groups, rate limits and task pauses.
type Controls interface {
	AcquireSlots(ctx context.Context, now time.Time, ps []AcquireParams) ([]AcquireResult, []error)
	RenewSlots(ctx context.Context, now time.Time, ps []RenewParams) ([]bool, []error)
	ReleaseSlots(ctx context.Context, now time.Time, ps []ReleaseParams) ([]ReleaseResult, []error)
	Park(ctx context.Context, recheck time.Time, ps []ParkParams) ([]string, []error)
	Unpark(ctx context.Context, ps []UnparkParams) ([]string, []error)
	TakeParked(ctx context.Context, part int, now, next time.Time, limit int) ([]ParkedRun, error)
	ParkedStates(ctx context.Context, now time.Time, runs []ParkedRun) ([]ParkedState, error)
	TakeRateLimits(ctx context.Context, now time.Time, reqs []RateTake) ([]RateTakeResult, []error)
	ReturnRateLimits(ctx context.Context, reqs []RateTake) ([]int, []error)
	DeferRuns(ctx context.Context, ds []Deferral) ([]DeferResult, []error)
	RateLimitUse(ctx context.Context, name, key string, period time.Duration) (int, error)
	PauseTask(ctx context.Context, name string, now time.Time) (bool, error)
	ResumeTask(ctx context.Context, name string) (bool, error)
	PausedTasks(ctx context.Context) (map[string]time.Time, error)
}

// Workers records the workers that serve a namespace and the tasks they
// registered.
type Workers interface {
	BeatWorker(ctx context.Context, rec WorkerRecord, now time.Time, keep time.Duration) error
	DeregisterWorker(ctx context.Context, name string) error
	ListWorkers(ctx context.Context, p ListWorkersParams) (WorkersView, error)
	RegisterTask(ctx context.Context, name string, record []byte, replace bool) ([]byte, error)
	GetTask(ctx context.Context, name string) ([]byte, error)
	ListTasks(ctx context.Context) (map[string][]byte, error)
	MissingTasks(ctx context.Context, names []string) ([]string, error)
}

// Stats are the run statistics and queue figures the dashboard draws.
type Stats interface {
	AddRunStats(ctx context.Context, batch RunStatsBatch) error
	ReadStats(ctx context.Context, now time.Time, step time.Duration, n int) ([]StatsSlot, error)
	QueueStats(ctx context.Context, tasks []string) (map[string]QueueStat, error)
	QueueWaits(ctx context.Context) (waits map[string]QueueWait, truncated bool, err error)
}

// Sessions are the dashboard's sign-in sessions.
type Sessions interface {
	UISessionSave(ctx context.Context, id string, ttl time.Duration) error
	UISessionLive(ctx context.Context, id string) (bool, error)
	UISessionDelete(ctx context.Context, id string) error
	UISessionEndAll(ctx context.Context) (int64, error)
}

// Namespace is the namespace a store serves and its partitions.
type Namespace interface {
	// Ping checks the store answers.
	Ping(ctx context.Context) error
	// PartitionCount is the namespace's partition count, recorded at its
	// first use.
	PartitionCount(ctx context.Context) (int, error)
	// RecordPartitions records the partition count the store was made
	// with, or refuses one that differs from the recorded count.
	RecordPartitions(ctx context.Context) error
}

// Notices is a subscription to topics (DoneTopic, CancelTopics): what
// is published on them arrives on C, as do the subscription's own
// changes (NoticeSubscribed, NoticeInterrupted). It resubscribes by itself
// after an interruption.
type Notices interface {
	C() <-chan Notice
	Subscribe(ctx context.Context, topics ...string) error
	Unsubscribe(ctx context.Context, topics ...string) error
	Close() error
}
