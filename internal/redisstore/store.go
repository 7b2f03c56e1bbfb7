package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/pkg/task"
)

// Store is the only place taskq talks to Redis: every state change of a run
// is one script here, and every key comes from Keys.
type Store struct {
	rdb     redis.UniversalClient
	keys    Keys
	scripts *scripts
	// addr names the server in errors.
	addr string
	// plain is set once the server turned out unable to compile a
	// script's shebang line: scripts are sent without it from then on.
	plain atomic.Bool
}

// New returns a Store for namespace ns on rdb.
func New(rdb redis.UniversalClient, ns string) *Store {
	return &Store{rdb: rdb, keys: NewKeys(ns), scripts: newScripts(), addr: Addr(rdb)}
}

// Addr names the server (or, for a cluster, the seed servers) rdb talks
// to, for error messages.
func Addr(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return ""
}

// Keys returns the key builder of the store's namespace.
func (s *Store) Keys() Keys { return s.keys }

// Redis returns the underlying client.
func (s *Store) Redis() redis.UniversalClient { return s.rdb }

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

// Strategy is the task's strategy (defined once, in package task), as the
// scripts store and read it.
type Strategy = task.Strategy

// The strategies a run is stored with: the task's, or StrategyNone for a
// run without an idempotency key, which is not deduplicated. StrategyNone
// is a storage value only, never a task's configuration.
const (
	StrategyNone     Strategy = "none"
	StrategyTTL               = task.StrategyTTL
	StrategyStatus            = task.StrategyStatus
	StrategyDebounce          = task.StrategyDebounce
)

// Policy is the trigger's conflict policy (defined once, in package task),
// as enqueue.lua reads it.
type Policy = task.ConflictPolicy

// Conflict policies, as the scripts name them.
const (
	PolicyReject    = task.ConflictReject
	PolicyAttach    = task.ConflictAttach
	PolicySupersede = task.ConflictSupersede
	PolicySignal    = task.ConflictSignal
)

// TriggerOutcome says what a trigger did.
type TriggerOutcome int

// Trigger outcomes, as enqueue.lua reports them.
const (
	TriggerRejected  TriggerOutcome = 0
	TriggerCreated   TriggerOutcome = 1
	TriggerAttached  TriggerOutcome = 2
	TriggerSignalled TriggerOutcome = 3
	TriggerDebounced TriggerOutcome = 4
)

// MaxSignalsDefault bounds the signals one run may hold.
const MaxSignalsDefault = 10000

// Run statuses as stored.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// IsTerminal reports whether status is final.
func IsTerminal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

func unixMS(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// --- results of scripts ---------------------------------------------------

func asSlice(v any) ([]any, error) {
	s, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("unexpected script reply %T", v)
	}
	return s, nil
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// runScript runs sc, loading it when the server's cache lacks it. A
// script whose shebang the server cannot compile is sent without it, then
// and from then on: it runs as it would there without the flags.
func (s *Store) runScript(ctx context.Context, sc *script, keys []string, args ...any) (any, error) {
	run := sc.Script
	if sc.plain != nil && s.plain.Load() {
		run = sc.plain
	}
	v, err := run.Run(ctx, s.rdb, keys, args...).Result()
	if run != sc.plain && sc.plain != nil && shebangUnsupported(err) {
		s.plain.Store(true)
		v, err = sc.plain.Run(ctx, s.rdb, keys, args...).Result()
	}
	return v, s.named(sc.name, scriptError(err))
}

// --- enqueue ----------------------------------------------------------------

// EnqueueParams describe one trigger.
type EnqueueParams struct {
	RunID    string
	Task     string
	Input    []byte // JSON
	Meta     []byte // JSON
	Key      string // idempotency key; "" with StrategyNone
	Strategy Strategy
	// Hold is the ttl (StrategyTTL) or the fallback ttl (StrategyStatus).
	Hold time.Duration
	// Retain keeps a status-strategy key after the run ends.
	Retain        time.Duration
	Retries       int
	MaxDeliveries int
	Timeout       time.Duration
	// Retention is how long the run record is kept after the run ends.
	Retention time.Duration
	Now       time.Time
	// Policy applies when the key is held (default reject).
	Policy Policy
	// SignalID names the signal sent to the owner under PolicySignal.
	SignalID string
	// MaxSignals bounds the owner's signals (default MaxSignalsDefault).
	MaxSignals int
}

// EnqueueResult is the outcome of one trigger.
type EnqueueResult struct {
	Outcome TriggerOutcome
	// Accepted is true when the run was created (Outcome TriggerCreated).
	Accepted bool
	EntryID  string
	// Superseded is the previous owner a PolicySupersede trigger took the
	// key from, if any.
	Superseded string
	// Owner is the run holding the key when the trigger created nothing.
	Owner    string
	OwnerTTL time.Duration
	SignalID string
}

// appendEnqueue appends one trigger's KEYS and ARGV, in the layout of
// enqueue.lua, to keys and args (which must start with the script's
// header, enqueueHeader).
func (s *Store) appendEnqueue(keys []string, args []any, p *EnqueueParams) ([]string, []any) {
	strat := p.Strategy
	if strat == "" {
		strat = StrategyNone
	}
	runs := s.keys.Runs()
	idem := runs // a placeholder the script never touches
	if strat != StrategyNone {
		idem = s.keys.IdempotencyKey(p.Key)
	}
	keys = append(keys, s.keys.Run(p.RunID), s.keys.Stream(p.Task), runs, idem)
	meta := p.Meta
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	policy := p.Policy
	if policy == "" {
		policy = PolicyReject
	}
	maxSignals := p.MaxSignals
	if maxSignals == 0 {
		maxSignals = MaxSignalsDefault
	}
	args = append(args, p.RunID, p.Task, p.Input, meta, p.Key, string(strat), ms(p.Hold), ms(p.Retain),
		p.Retries, p.MaxDeliveries, ms(p.Timeout), ms(p.Retention), unixMS(p.Now),
		string(policy), p.SignalID, maxSignals)
	return keys, args
}

// enqueueHeader is the ARGV every call of enqueue.lua starts with.
func (s *Store) enqueueHeader(n int) ([]string, []any) {
	return make([]string, 0, 4*n), append(make([]any, 0, 2+16*n), s.keys.Prefix(), GroupName)
}

func (s *Store) parseEnqueue(v any) (EnqueueResult, error) {
	if err, ok := v.(error); ok {
		return EnqueueResult{}, s.named("enqueue", scriptError(err))
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return EnqueueResult{}, fmt.Errorf("enqueue: unexpected reply %v", v)
	}
	res := EnqueueResult{Outcome: TriggerOutcome(asInt(r[0]))}
	switch res.Outcome {
	case TriggerCreated:
		res.Accepted, res.EntryID = true, asString(r[1])
		if len(r) > 2 {
			res.Superseded = asString(r[2])
		}
	case TriggerRejected:
		res.Owner = asString(r[1])
		if len(r) > 2 {
			if t := asInt(r[2]); t > 0 {
				res.OwnerTTL = time.Duration(t) * time.Millisecond
			}
		}
	case TriggerSignalled:
		res.Owner = asString(r[1])
		if len(r) > 2 {
			res.SignalID = asString(r[2])
		}
	default:
		res.Owner = asString(r[1])
	}
	return res, nil
}

// Enqueue claims the key, creates the run and queues it in one script.
func (s *Store) Enqueue(ctx context.Context, p *EnqueueParams) (EnqueueResult, error) {
	res, errs := s.EnqueueBatch(ctx, []*EnqueueParams{p})
	return res[0], errs[0]
}

// EnqueueBatch sends the triggers to the enqueue script, up to
// MaxItemsPerCall per call, which handles them in order, so a later trigger
// of a key collides with an earlier one of the same batch. The i-th result
// and error belong to the i-th trigger, and are what Enqueue would have
// returned for it alone.
func (s *Store) EnqueueBatch(ctx context.Context, ps []*EnqueueParams) ([]EnqueueResult, []error) {
	results := make([]EnqueueResult, len(ps))
	errs := s.evalBatch(ctx, s.scripts.enqueue, len(ps), func(lo, hi int) ([]string, []any) {
		keys, args := s.enqueueHeader(hi - lo)
		for _, p := range ps[lo:hi] {
			keys, args = s.appendEnqueue(keys, args, p)
		}
		return keys, args
	}, func(i int, r []any) (n int, err error) {
		results[i], err = s.parseEnqueue(r[0])
		return 1, err
	})
	return results, errs
}

// MaxItemsPerCall bounds the items (triggers, deliveries, outcomes) one call
// of a batch script handles. A script holds Redis while it runs, about 15 µs
// per trigger; larger batches are sent as several calls, one after another.
const MaxItemsPerCall = 256

// evalBatch runs sc, a script that takes many items and replies with an
// array of values for items 0..n-1: build gives the KEYS and ARGV of items
// lo..hi-1, at most MaxItemsPerCall of them, and parse is handed the reply
// from item i's first value on and says how many values are item i's. The
// i-th error is the script's error for item i, or the error of the call
// that carried it.
func (s *Store) evalBatch(ctx context.Context, sc *script, n int, build func(lo, hi int) ([]string, []any), parse func(i int, r []any) (int, error)) []error {
	errs := make([]error, n)
	for lo := 0; lo < n; lo += MaxItemsPerCall {
		hi := min(lo+MaxItemsPerCall, n)
		keys, args := build(lo, hi)
		v, err := s.runScript(ctx, sc, keys, args...)
		var r []any
		if err == nil {
			r, err = asSlice(v)
		}
		if err != nil {
			for i := lo; i < hi; i++ {
				errs[i] = err
			}
			continue
		}
		for i := lo; i < hi; i++ {
			if len(r) == 0 {
				errs[i] = fmt.Errorf("%s: no reply for item %d of %d", sc.name, i-lo+1, hi-lo)
				continue
			}
			used, err := parse(i, r)
			errs[i] = err
			r = r[min(max(used, 1), len(r)):]
		}
		if len(r) != 0 {
			for i := lo; i < hi; i++ {
				if errs[i] == nil {
					errs[i] = fmt.Errorf("%s: %d values left over in the reply", sc.name, len(r))
				}
			}
		}
	}
	return errs
}

// --- runs -------------------------------------------------------------------

// Run is a run record as stored.
type Run struct {
	ID       string
	Task     string
	Status   string
	Input    []byte
	Meta     []byte
	Key      string
	Strategy Strategy
	Hold     time.Duration
	Retain   time.Duration
	Attempt  int
	Fails    int
	Retries  int
	Timeout  time.Duration
	Result   []byte
	Error    string
	Consumer string
	Created  time.Time
	Started  time.Time
	Finished time.Time
}

func parseRun(id string, h map[string]string) *Run {
	i := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
	r := &Run{
		ID: id, Task: h["task"], Status: h["status"], Key: h["key"], Strategy: Strategy(h["strat"]),
		Hold: time.Duration(i("hold")) * time.Millisecond, Retain: time.Duration(i("retain")) * time.Millisecond,
		Attempt: int(i("attempt")), Fails: int(i("fails")), Retries: int(i("retries")),
		Timeout: time.Duration(i("timeout")) * time.Millisecond,
		Error:   h["error"], Consumer: h["consumer"],
		Created: fromMS(i("created")), Started: fromMS(i("started")), Finished: fromMS(i("finished")),
	}
	if v, ok := h["input"]; ok {
		r.Input = []byte(v)
	}
	if v, ok := h["meta"]; ok {
		r.Meta = []byte(v)
	}
	if v, ok := h["result"]; ok {
		r.Result = []byte(v)
	}
	return r
}

// GetRun reads a run record.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.Run(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrRunNotFound, id)
	}
	return parseRun(id, h), nil
}

// RunStatus reads only a run's status.
func (s *Store) RunStatus(ctx context.Context, id string) (string, error) {
	st, err := s.rdb.HGet(ctx, s.keys.Run(id), "status").Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: %s", ErrRunNotFound, id)
	}
	return st, err
}

// WatchRun asks for the run's completion notice on its DoneChannel, which
// is published only for runs watched before they end, and returns its
// status. Subscribe to the channel first: a run that ends after WatchRun
// is published, and one that had ended shows in the status returned.
func (s *Store) WatchRun(ctx context.Context, id string) (string, error) {
	v, err := s.runScript(ctx, s.scripts.watch, []string{s.keys.Run(id)})
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: %s", ErrRunNotFound, id)
	}
	if err != nil {
		return "", err
	}
	return asString(v), nil
}

// ListRunIDs returns up to limit run IDs, newest first, from the runs index.
func (s *Store) ListRunIDs(ctx context.Context, offset, limit int64) ([]string, error) {
	return s.rdb.ZRevRange(ctx, s.keys.Runs(), offset, offset+limit-1).Result()
}

// --- start, finish, cancel -----------------------------------------------

// StartParams identify a delivery a worker is about to run.
type StartParams struct {
	RunID    string
	Task     string
	EntryID  string
	Consumer string
	Now      time.Time
}

// StartResult is the outcome of Start.
type StartResult struct {
	Started bool
	// Reason says why the delivery was not started: "missing", "stale",
	// "exhausted" or the run's terminal status.
	Reason string
	// Error is the run's error when Reason is its terminal status (for a
	// cancelled run, why: "superseded by run <id>").
	Error   string
	Attempt int
	// Spec is the run to run (input, key, retries, failed attempts, ...),
	// as the delivery or, lacking it, the record said; set when Started.
	// FinishParams takes it back.
	Spec *RunSpec
}

// Start begins a new attempt of the delivered run. StartBatch does the
// same for many deliveries in one call.
func (s *Store) Start(ctx context.Context, p *StartParams) (StartResult, error) {
	res, errs := s.StartBatch(ctx, p.Consumer, p.Now, []Delivery{{Task: p.Task, EntryID: p.EntryID, RunID: p.RunID}})
	return res[0], errs[0]
}

// Outcome is what an attempt reports.
type Outcome string

// Outcomes of an attempt.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeRetry     Outcome = "retry"
)

// FinishParams report the end of an attempt.
type FinishParams struct {
	RunID   string
	Attempt int
	Outcome Outcome
	// Payload is the result JSON on success, the error message otherwise.
	Payload []byte
	RetryAt time.Time
	Now     time.Time
	// Task, EntryID and Spec come from the delivery and its start. With
	// them, the finish script need not read from the record what does not
	// change while a run is queued or running; without them it does.
	Task    string
	EntryID string
	Spec    *RunSpec
	// Began, when set, begins the attempt in the same write as its
	// outcome, for a handler that ran before the attempt was recorded as
	// begun (Start was never called for the delivery): Attempt is then the
	// delivery's Spec.Attempts+1, and the write happens only if the run is
	// still queued with EntryID and has begun no attempt since the entry
	// was written. Needs Task, EntryID and Spec. Consumer is recorded as the
	// attempt's worker.
	Began    time.Time
	Consumer string
}

// FinishResult says whether the outcome was recorded.
type FinishResult struct {
	Written bool
	// Status is the run's status after a write; otherwise why nothing was
	// written: "missing", "stale" or the status the run already had.
	Status string
}

func (s *Store) parseWritten(name string, v any) (FinishResult, error) {
	if err, ok := v.(error); ok {
		return FinishResult{}, s.named(name, scriptError(err))
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return FinishResult{}, fmt.Errorf("%s: unexpected reply %v", name, v)
	}
	return s.parseWrittenValues(name, r)
}

// parseWrittenValues reads a {written, status or reason} reply from its
// first two values.
func (s *Store) parseWrittenValues(name string, r []any) (FinishResult, error) {
	if len(r) < 2 {
		return FinishResult{}, fmt.Errorf("%s: unexpected reply %v", name, r)
	}
	if err, ok := r[0].(error); ok {
		return FinishResult{}, s.named(name, scriptError(err))
	}
	return FinishResult{Written: asInt(r[0]) == 1, Status: asString(r[1])}, nil
}

// Finish records an attempt's outcome, fenced by its attempt number.
func (s *Store) Finish(ctx context.Context, p *FinishParams) (FinishResult, error) {
	res, errs := s.FinishBatch(ctx, []*FinishParams{p})
	return res[0], errs[0]
}

// Cancel cancels a run that has not ended.
func (s *Store) Cancel(ctx context.Context, runID, reason string, now time.Time) (FinishResult, error) {
	v, err := s.runScript(ctx, s.scripts.cancel, []string{s.keys.Run(runID)},
		runID, unixMS(now), reason, GroupName, s.keys.Prefix())
	if err != nil {
		return FinishResult{}, err
	}
	return s.parseWritten("cancel", v)
}

// Requeue gives a running attempt's run back to the queue at once.
func (s *Store) Requeue(ctx context.Context, runID, task string, attempt int) (FinishResult, error) {
	v, err := s.runScript(ctx, s.scripts.requeue, []string{s.keys.Run(runID), s.keys.Stream(task)},
		runID, attempt, GroupName)
	if err != nil {
		return FinishResult{}, err
	}
	return s.parseWritten("requeue", v)
}
