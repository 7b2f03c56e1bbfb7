package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Events live in three kinds of keys, all under the namespace's hash tag:
//
//	taskq:{ns}:event:<event id>      hash  key, payload, meta, created (ms), runs (JSON)
//	taskq:{ns}:events                zset  every event by time (ms), swept by SweepEvents
//	taskq:{ns}:eventkey:<event key>  zset  the events of one key by time (ms); trimmed
//	                                       on every push and expiring with its newest event

// ErrEventNotFound is returned for an event that does not exist, or whose
// record has expired.
var ErrEventNotFound = errors.New("event not found")

// ErrEventExists is returned when an event ID is already taken.
var ErrEventExists = errors.New("event ID already exists")

// What push_event.lua records for each subscribed task.
const (
	EventRunCreated      = "created"
	EventRunDeduplicated = "deduplicated"
	EventRunDebounced    = "debounced"
	EventRunError        = "error"
)

// EventTask is one subscribed task's part of an event.
type EventTask struct {
	// Run describes the run to create: its input and metadata are the
	// event's, Now is the event's time. Ignored when Error is set.
	Run *EnqueueParams
	// Task names the task when Run is nil.
	Task string
	// Error says why no run is attempted for the task (its expression
	// failed on this payload). The event records it.
	Error string
}

func (t EventTask) name() string {
	if t.Run != nil {
		return t.Run.Task
	}
	return t.Task
}

// errText is what the event records as the task's error: "" when a run is
// attempted.
func (t EventTask) errText() string {
	if t.Error == "" && t.Run == nil {
		return "no run described"
	}
	return t.Error
}

// PushEventParams describe one event.
type PushEventParams struct {
	ID      string
	Key     string
	Payload []byte // JSON object
	Meta    []byte // JSON object
	Now     time.Time
	// Retention is how long the event record is kept.
	Retention time.Duration
	// Tasks are the subscribed tasks, in the order their keys are claimed.
	Tasks []EventTask
}

// EventRun is what happened to one subscribed task of an event.
type EventRun struct {
	Task    string `json:"task"`
	Outcome string `json:"outcome"`
	// RunID is the run created, or the run the event was deduplicated or
	// debounced to.
	RunID          string `json:"runId,omitempty"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Error          string `json:"error,omitempty"`
}

// Event is an event record as stored.
type Event struct {
	ID      string
	Key     string
	Payload []byte
	Meta    []byte
	Created time.Time
	Runs    []EventRun
}

func (s *Store) pushEventArgs(p *PushEventParams) ([]string, []any) {
	keys := []string{s.keys.Event(p.ID), s.keys.Events(), s.keys.EventKeyIndex(p.Key), s.keys.Runs()}
	meta := p.Meta
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	args := make([]any, 0, 8+11*len(p.Tasks))
	args = append(args, p.ID, p.Key, p.Payload, meta, unixMS(p.Now), ms(p.Retention), s.keys.Prefix(), len(p.Tasks))
	for _, t := range p.Tasks {
		r := t.Run
		if msg := t.errText(); msg != "" {
			args = append(args, t.name(), "", "", string(StrategyNone), 0, 0, 0, 0, 0, 0, msg)
			continue
		}
		strat := r.Strategy
		if strat == "" {
			strat = StrategyNone
		}
		// The same fields, in the same units, as appendEnqueue gives enqueue.lua.
		args = append(args, r.Task, r.RunID, r.Key, string(strat), ms(r.Hold), ms(r.Retain),
			r.Retries, r.MaxDeliveries, ms(r.Timeout), ms(r.Retention), "")
	}
	return keys, args
}

func parsePushEvent(p *PushEventParams, v any) ([]EventRun, error) {
	r, err := asSlice(v)
	if err != nil || len(r) != 2*len(p.Tasks) {
		return nil, fmt.Errorf("push event: unexpected reply %v", v)
	}
	out := make([]EventRun, len(p.Tasks))
	for i, t := range p.Tasks {
		out[i] = EventRun{Task: t.name(), Outcome: asString(r[2*i]), RunID: asString(r[2*i+1]), Error: t.errText()}
		if out[i].Error == "" {
			out[i].IdempotencyKey = t.Run.Key
		}
	}
	return out, nil
}

func (s *Store) eventScriptError(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "TASKQ_EVENT_EXISTS ") {
		return fmt.Errorf("%w: %s", ErrEventExists, strings.TrimPrefix(err.Error(), "TASKQ_EVENT_EXISTS "))
	}
	return s.named("push_event", scriptError(err))
}

// PushEvent stores an event and triggers its tasks' runs in one script.
// The i-th EventRun belongs to the i-th task.
func (s *Store) PushEvent(ctx context.Context, p *PushEventParams) ([]EventRun, error) {
	k, a := s.pushEventArgs(p)
	v, err := s.scripts.pushEvent.Run(ctx, s.rdb, k, a...).Result()
	if err != nil {
		return s.fromEventResend(ctx, p, s.eventScriptError(err))
	}
	return parsePushEvent(p, v)
}

// fromEventResend recognises a push whose script ran twice: go-redis sends
// a command again when the connection broke before the reply arrived, and
// the second run finds the event the first one stored. What that first run
// recorded is the push's outcome.
func (s *Store) fromEventResend(ctx context.Context, p *PushEventParams, err error) ([]EventRun, error) {
	if !errors.Is(err, ErrEventExists) {
		return nil, err
	}
	ev, gerr := s.GetEvent(ctx, p.ID)
	if gerr != nil || ev.Key != p.Key || ev.Created.UnixMilli() != unixMS(p.Now) || string(ev.Payload) != string(p.Payload) ||
		len(ev.Runs) != len(p.Tasks) {
		return nil, err
	}
	return ev.Runs, nil
}

// PushEvents pushes many events in one round trip, in order, so a later
// event of the batch is deduplicated to a run an earlier one created. Each
// event is atomic on its own. The i-th result and error belong to the i-th
// event.
func (s *Store) PushEvents(ctx context.Context, ps []*PushEventParams) ([][]EventRun, []error) {
	res := make([][]EventRun, len(ps))
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return res, errs
	}
	var cmds []*redis.Cmd
	for try := 0; try < 2; try++ {
		pipe := s.rdb.Pipeline()
		cmds = make([]*redis.Cmd, len(ps))
		for i, p := range ps {
			k, a := s.pushEventArgs(p)
			cmds[i] = s.scripts.pushEvent.EvalSha(ctx, pipe, k, a...)
		}
		_, _ = pipe.Exec(ctx)
		// A NOSCRIPT reply means that call did not run: load and send again.
		if try > 0 || !isNoScript(cmds[0].Err()) {
			break
		}
		if err := s.scripts.pushEvent.Load(ctx, s.rdb).Err(); err != nil {
			break
		}
	}
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil {
			res[i], errs[i] = s.fromEventResend(ctx, ps[i], s.eventScriptError(err))
			continue
		}
		res[i], errs[i] = parsePushEvent(ps[i], v)
	}
	return res, errs
}

func parseEvent(id string, h map[string]string) (*Event, error) {
	e := &Event{ID: id, Key: h["key"], Payload: []byte(h["payload"]), Meta: []byte(h["meta"])}
	created, _ := strconv.ParseInt(h["created"], 10, 64)
	e.Created = fromMS(created)
	if raw := h["runs"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &e.Runs); err != nil {
			return nil, fmt.Errorf("event %s: runs: %w", id, err)
		}
	}
	return e, nil
}

// GetEvent reads an event record.
func (s *Store) GetEvent(ctx context.Context, id string) (*Event, error) {
	h, err := s.rdb.HGetAll(ctx, s.keys.Event(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrEventNotFound, id)
	}
	return parseEvent(id, h)
}

// GetEvents reads many event records in one round trip. An event that does
// not exist (any more) is left out.
func (s *Store) GetEvents(ctx context.Context, ids []string) ([]*Event, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = pipe.HGetAll(ctx, s.keys.Event(id))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]*Event, 0, len(ids))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		e, err := parseEvent(ids[i], h)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// ListEventIDs returns up to limit event IDs, newest first, of every event
// or, with eventKey set, of that key's events.
func (s *Store) ListEventIDs(ctx context.Context, eventKey string, offset, limit int64) ([]string, error) {
	index := s.keys.Events()
	if eventKey != "" {
		index = s.keys.EventKeyIndex(eventKey)
	}
	return s.rdb.ZRevRange(ctx, index, offset, offset+limit-1).Result()
}

// SubscribeFinished subscribes to the namespace's notices of runs reaching
// a terminal status, for counting them by status (see ParseFinished). The
// caller closes the returned PubSub.
func (s *Store) SubscribeFinished(ctx context.Context) *redis.PubSub {
	return s.rdb.Subscribe(ctx, s.keys.FinishedChannel())
}

// ParseFinished reads a notice of the finished channel: how many runs
// reached each terminal status. Unknown statuses and malformed counts are
// left out.
func ParseFinished(msg string) map[string]int {
	f := strings.Fields(msg)
	out := make(map[string]int, len(f)/2)
	for i := 0; i+1 < len(f); i += 2 {
		n, err := strconv.Atoi(f[i+1])
		if err != nil || n <= 0 || !IsTerminal(f[i]) {
			continue
		}
		out[f[i]] += n
	}
	return out
}
