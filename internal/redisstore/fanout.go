package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// An event's fan-out is what it does to each task subscribed to its key: a
// run, a swallowed collision (the run holding the key), or the error of a
// task whose key could not be derived.
//
// An event lives in the partition of its ID (eventPrefix), and each task's
// run in the partition of its idempotency key (triggerPrefix). When every
// run lives in the event's slot, always the case while a namespace has one
// partition, push_event.lua does the whole fan-out in one script, all or
// nothing. Otherwise it goes in three steps, each one script on one slot,
// and stays whole however the ingester dies between them:
//
//  1. store_event.lua, in the event's partition: the event, with its
//     pending fan-out (each task's trigger and the prefix it goes to), and
//     an entry in that partition's pending fan-outs.
//  2. trigger_event.lua, once per partition the runs go to: each task's
//     trigger, idempotent on (event, task) through a marker kept for the
//     event's retention, so that a replay answers the first outcome and
//     never creates a second run.
//  3. record_event.lua, in the event's partition: the outcomes, on the
//     event, which leaves the pending fan-outs. The first to record wins.
//
// A fan-out left pending (its ingester died, or Redis refused a later step)
// is finished by RecoverFanouts, which every worker's janitor calls: it
// takes the fan-outs pending for longer than FanoutGrace (take_fanouts.lua)
// and replays steps 2 and 3 from what step 1 stored. Each step being
// idempotent, a recoverer racing the ingester or another recoverer can only
// do the same work twice.

// eventPrefix is the key prefix of the partition the event with ID id lives
// in (the one its ID names, as a run ID does): its record, its entries in
// the events indexes and in the pending fan-outs. The namespace's layout
// has been read by then (placeEvent, RecoverFanouts).
func (s *Store) eventPrefix(id string) string {
	parts := s.KnownPartitions()
	if parts == nil {
		return s.keys.Prefix()
	}
	i, ok := parts.OfRun(id)
	if !ok {
		i = 0
	}
	return parts.Keys(i).Prefix()
}

// triggerPrefix is the key prefix of the partition the trigger of a
// subscribed task goes to, the partition of the run r describes: its
// idempotency key's, or for a run without a key the one its run ID names
// (placing r names it). The trigger's marker lives there too. It is decided
// once, when the event is stored, and kept with the pending fan-out, so a
// replay goes where the first trigger went.
func (s *Store) triggerPrefix(r *engine.EnqueueParams) string {
	parts := s.KnownPartitions()
	if parts == nil {
		return s.keys.Prefix()
	}
	return parts.Keys(parts.place(r)).Prefix()
}

// eventPrefixes are the key prefixes of every partition events live in,
// where the recoverer looks for pending fan-outs.
func (s *Store) eventPrefixes() []string {
	parts := s.KnownPartitions()
	if parts == nil {
		return []string{s.keys.Prefix()}
	}
	out := make([]string, parts.Count())
	for i := range out {
		out[i] = parts.Keys(i).Prefix()
	}
	return out
}

// placeEvent reads the namespace's layout, places each run of p in its
// partition (naming it in the run's ID) and names the event's partition in
// its ID: the partition of its first run, so that an event whose runs
// share a partition (every event of a namespace with one partition, and
// each event of one subscribed task) is pushed in one script; an event with
// no run goes where its ID hashes to.
func (s *Store) placeEvent(ctx context.Context, p *engine.PushEventParams) error {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	if parts.Count() == 1 {
		return nil
	}
	base := plainID(p.ID)
	part := -1
	for _, t := range p.Tasks {
		if eventTaskError(t) == "" && t.Run != nil {
			if i := parts.place(t.Run); part < 0 {
				part = i
			}
		}
	}
	if part < 0 {
		part = parts.place(&engine.EnqueueParams{RunID: base})
	}
	p.ID = engine.InPartition(base, part)
	return nil
}

// inEventSlot reports whether every run of p lives in the event's slot, so
// that push_event.lua can do the whole fan-out at once.
func (s *Store) inEventSlot(p *engine.PushEventParams) bool {
	if h := s.fanoutHooks.Load(); h != nil && h.Steps {
		return false
	}
	home := s.eventPrefix(p.ID)
	for _, t := range p.Tasks {
		if eventTaskError(t) == "" && s.triggerPrefix(t.Run) != home {
			return false
		}
	}
	return true
}

// fanout is an event's pending fan-out as step 1 stores it, in the
// event's fanout field: what each task's trigger needs besides the event's
// payload, metadata and time, which the record holds.
type fanout struct {
	// Retention is the event's (ms), and its markers'.
	Retention int64        `json:"keep"`
	Tasks     []fanoutTask `json:"tasks"`
}

// fanoutTask is one subscribed task of a fan-out, in the units
// trigger_event.lua takes.
type fanoutTask struct {
	Task string `json:"task"`
	// Error says why no run is attempted: the task gets no trigger.
	Error string `json:"error,omitempty"`
	// Prefix is where the trigger goes (triggerPrefix).
	Prefix        string          `json:"prefix,omitempty"`
	RunID         string          `json:"run,omitempty"`
	Key           string          `json:"key,omitempty"`
	Strategy      engine.Strategy `json:"strat,omitempty"`
	Hold          int64           `json:"hold,omitempty"`
	Retain        int64           `json:"retain,omitempty"`
	Retries       int             `json:"retries,omitempty"`
	MaxDeliveries int             `json:"maxdel,omitempty"`
	Timeout       int64           `json:"timeout,omitempty"`
	RunRetention  int64           `json:"runKeep,omitempty"`
	// Priority is the run's priority above the default (0: the default).
	Priority int `json:"prio,omitempty"`
}

// fanoutJob is a fan-out to carry out: the event's part and the tasks'.
type fanoutJob struct {
	id      string
	prefix  string // the event's
	payload []byte
	meta    []byte
	now     int64 // the event's time (unix ms)
	f       fanout
}

// planFanout decides where each task's trigger of p goes.
func (s *Store) planFanout(p *engine.PushEventParams) *fanoutJob {
	meta := p.Meta
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	j := &fanoutJob{id: p.ID, prefix: s.eventPrefix(p.ID), payload: p.Payload, meta: meta, now: unixMS(p.Now),
		f: fanout{Retention: ms(p.Retention), Tasks: make([]fanoutTask, len(p.Tasks))}}
	for i, t := range p.Tasks {
		if msg := eventTaskError(t); msg != "" {
			j.f.Tasks[i] = fanoutTask{Task: eventTaskName(t), Error: msg}
			continue
		}
		r := t.Run
		strat := r.Strategy
		if strat == "" {
			strat = engine.StrategyNone
		}
		j.f.Tasks[i] = fanoutTask{
			Task: r.Task, Prefix: s.triggerPrefix(r), RunID: r.RunID, Key: r.Key, Strategy: strat,
			Hold: ms(r.Hold), Retain: ms(r.Retain), Retries: r.Retries, MaxDeliveries: r.MaxDeliveries,
			Timeout: ms(r.Timeout), RunRetention: ms(r.Retention), Priority: priorityAbove(r.Priority),
		}
	}
	return j
}

// jobOf is the job of a pending fan-out read back from its event, which
// lives under prefix.
func jobOf(prefix, id, raw, payload, meta, created string) (*fanoutJob, error) {
	j := &fanoutJob{id: id, prefix: prefix, payload: []byte(payload), meta: []byte(meta)}
	j.now, _ = strconv.ParseInt(created, 10, 64)
	if err := json.Unmarshal([]byte(raw), &j.f); err != nil {
		return nil, fmt.Errorf("redisstore: event %s: pending fan-out: %w", id, err)
	}
	return j, nil
}

// SetFanoutHooks sets the store's fan-out hooks (nil: none), for tests.
func (s *Store) SetFanoutHooks(h *engine.FanoutHooks) { s.fanoutHooks.Store(h) }

func (s *Store) afterStep(step engine.FanoutStep, j *fanoutJob, triggered int) error {
	if h := s.fanoutHooks.Load(); h != nil && h.After != nil {
		if err := h.After(step, j.id, triggered); err != nil {
			return &engine.FanoutPendingError{EventID: j.id, Err: err}
		}
	}
	return nil
}

// pushEventSteps carries out p's fan-out in steps.
func (s *Store) pushEventSteps(ctx context.Context, p *engine.PushEventParams) ([]engine.EventRun, error) {
	j := s.planFanout(p)
	if err := s.storeEvent(ctx, j, p.Key); err != nil {
		return s.fromEventResend(ctx, p, err)
	}
	if err := s.afterStep(engine.FanoutStored, j, 0); err != nil {
		return nil, err
	}
	return s.finishFanout(ctx, j)
}

// finishFanout triggers the tasks of j, partition by partition, in order
// within each, and records the outcomes: steps 2 and 3, for a push as for
// a recovery.
func (s *Store) finishFanout(ctx context.Context, j *fanoutJob) ([]engine.EventRun, error) {
	runs, refused := make([]engine.EventRun, len(j.f.Tasks)), make([]error, len(j.f.Tasks))
	var prefixes []string
	byPrefix := map[string][]int{}
	for i, t := range j.f.Tasks {
		if t.Error != "" {
			runs[i] = engine.EventRun{Task: t.Task, Outcome: engine.EventRunError, Error: t.Error}
			continue
		}
		if _, ok := byPrefix[t.Prefix]; !ok {
			prefixes = append(prefixes, t.Prefix)
		}
		byPrefix[t.Prefix] = append(byPrefix[t.Prefix], i)
	}
	per := MaxItemsPerCall
	if h := s.fanoutHooks.Load(); h != nil && h.TriggersPerCall > 0 {
		per = h.TriggersPerCall
	}
	triggered := 0
	for _, prefix := range prefixes {
		tasks := byPrefix[prefix]
		for lo := 0; lo < len(tasks); lo += per {
			hi := min(lo+per, len(tasks))
			if err := s.triggerEvent(ctx, j, prefix, tasks[lo:hi], runs, refused); err != nil {
				return nil, &engine.FanoutPendingError{EventID: j.id, Err: err}
			}
			triggered += hi - lo
			if err := s.afterStep(engine.FanoutTriggered, j, triggered); err != nil {
				return nil, err
			}
		}
	}
	recorded, err := s.recordEvent(ctx, j, runs)
	if err != nil {
		return nil, &engine.FanoutPendingError{EventID: j.id, Err: err}
	}
	return recorded, nil
}

// RecoverFanouts finishes fan-outs that have been pending since before now
// minus grace, looking at up to limit of them in each partition: it takes
// them (no other recoverer takes them for grace), triggers their tasks and
// records the outcomes. It returns how many it took and how many of those
// it finished; the others stay pending, to be taken again after grace, and
// their errors are joined in err. With nothing pending it costs one script
// call per partition.
func (s *Store) RecoverFanouts(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, finished int, err error) {
	if _, err := s.Partitions(ctx); err != nil {
		return 0, 0, err
	}
	var errs []error
	for _, prefix := range s.eventPrefixes() {
		jobs, err := s.takeFanouts(ctx, prefix, now.Add(-grace), now, limit)
		if err != nil {
			errs = append(errs, err)
		}
		taken += len(jobs)
		for _, j := range jobs {
			if _, err := s.finishFanout(ctx, j); err != nil {
				errs = append(errs, err)
				continue
			}
			finished++
		}
	}
	return taken, finished, errors.Join(errs...)
}
