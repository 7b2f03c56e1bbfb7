package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/taskq/taskq/internal/engine"
)

// pushEventScript stores an event and triggers its tasks' runs, the whole
// fan-out at once: lua/push_event.lua. See fanout.go for the fan-out in
// steps.
var pushEventScript = loadScript("push_event")

// pushEventArgs returns the KEYS and ARGV of push_event.lua for p, whose
// runs all live in the event's slot (inEventSlot).
func (s *Store) pushEventArgs(p *engine.PushEventParams) ([]string, []any) {
	prefix := s.eventPrefix(p.ID)
	keys := s.keys.under(prefix)
	k := [1 + pushEventKeyCount]string{
		pushEventKeyEvent:         keys.Event(p.ID),
		pushEventKeyEvents:        keys.Events(),
		pushEventKeyEventKeyIndex: keys.EventKeyIndex(p.Key),
		pushEventKeyRuns:          keys.Runs(),
	}
	meta := p.Meta
	if len(meta) == 0 {
		meta = []byte("{}")
	}
	h := [1 + pushEventArgCount]any{
		pushEventArgEventID:       p.ID,
		pushEventArgEventKey:      p.Key,
		pushEventArgPayload:       p.Payload,
		pushEventArgMeta:          meta,
		pushEventArgNow:           unixMS(p.Now),
		pushEventArgRetention:     ms(p.Retention),
		pushEventArgPrefix:        prefix,
		pushEventArgTaskCount:     len(p.Tasks),
		pushEventArgSource:        engine.SourceEventPrefix + p.ID,
		pushEventArgDigest:        engine.InputDigest(p.Payload),
		pushEventArgSuppressedCap: s.suppressedCap(),
	}
	args := append(make([]any, 0, pushEventArgCount+pushEventItemArgCount*len(p.Tasks)), h[1:]...)
	for _, t := range p.Tasks {
		r := t.Run
		if msg := eventTaskError(t); msg != "" {
			a := [pushEventItemArgCount]any{
				pushEventItemArgTask: eventTaskName(t), pushEventItemArgRunID: "", pushEventItemArgIdempotencyKey: "",
				pushEventItemArgSpec: settingsSpec(engine.StrategyNone, 0, 0, 0, 0, 0, 0, 0), pushEventItemArgError: msg,
			}
			args = append(args, a[:]...)
			continue
		}
		strat := r.Strategy
		if strat == "" {
			strat = engine.StrategyNone
		}
		// The same fields, in the same units, as appendEnqueue gives enqueue.lua.
		a := [pushEventItemArgCount]any{
			pushEventItemArgTask:           r.Task,
			pushEventItemArgRunID:          r.RunID,
			pushEventItemArgIdempotencyKey: r.Key,
			pushEventItemArgSpec: settingsSpec(strat, ms(r.Hold), r.Retries, ms(r.Timeout), unixMS(p.Now), r.MaxDeliveries,
				ms(r.Retain), ms(r.Retention)),
			pushEventItemArgError: "",
		}
		args = append(args, a[:]...)
	}
	// The priorities, after the tasks', when one is above the default.
	if slices.ContainsFunc(p.Tasks, func(t engine.EventTask) bool { return t.Run != nil && t.Run.Priority > engine.PriorityDefault }) {
		for _, t := range p.Tasks {
			prio := engine.PriorityDefault
			if t.Run != nil {
				prio = max(t.Run.Priority, prio)
			}
			args = append(args, prio)
		}
	}
	return k[1:], args
}

func parsePushEvent(p *engine.PushEventParams, v any) ([]engine.EventRun, error) {
	r, err := asSlice(v)
	if err != nil || len(r) != 2*len(p.Tasks) {
		return nil, fmt.Errorf("redisstore: push event: unexpected reply %v", v)
	}
	out := make([]engine.EventRun, len(p.Tasks))
	for i, t := range p.Tasks {
		out[i] = engine.EventRun{Task: eventTaskName(t), Outcome: asString(r[2*i]), RunID: asString(r[2*i+1]), Error: eventTaskError(t)}
		if out[i].Error == "" {
			out[i].IdempotencyKey = t.Run.Key
		}
	}
	return out, nil
}

// eventExists turns the error reply of a script that found the event's ID
// taken into engine.ErrEventExists (scriptError and named leave that reply
// as it is).
func eventExists(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "TASKQ_EVENT_EXISTS ") {
		return fmt.Errorf("%w: %s", engine.ErrEventExists, strings.TrimPrefix(err.Error(), "TASKQ_EVENT_EXISTS "))
	}
	return err
}

// PushEvent stores an event and triggers its tasks' runs: in one script
// when they all live in the event's slot, else in steps (see fanout.go).
// The i-th EventRun belongs to the i-th task. A *FanoutPendingError says
// the event is stored and its fan-out will be finished by a worker.
func (s *Store) PushEvent(ctx context.Context, p *engine.PushEventParams) ([]engine.EventRun, error) {
	if err := s.placeEvent(ctx, p); err != nil {
		return nil, err
	}
	if !s.inEventSlot(p) {
		return s.pushEventSteps(ctx, p)
	}
	k, a := s.pushEventArgs(p)
	v, err := s.runScript(ctx, pushEventScript, k, a...)
	if err != nil {
		return s.fromEventResend(ctx, p, eventExists(err))
	}
	return parsePushEvent(p, v)
}

// fromEventResend recognises a push whose first script ran twice: go-redis
// sends a command again when the connection broke before the reply
// arrived, and the second run finds the event the first one stored. What
// that first run recorded is the push's outcome; a fan-out it left pending
// is finished now.
func (s *Store) fromEventResend(ctx context.Context, p *engine.PushEventParams, err error) ([]engine.EventRun, error) {
	if !errors.Is(err, engine.ErrEventExists) {
		return nil, err
	}
	ev, gerr := s.GetEvent(ctx, p.ID)
	if gerr != nil || ev.Key != p.Key || ev.Created.UnixMilli() != unixMS(p.Now) || string(ev.Payload) != string(p.Payload) {
		return nil, err
	}
	if ev.PendingFanout != "" {
		j, jerr := jobOf(s.eventPrefix(p.ID), p.ID, ev.PendingFanout, string(ev.Payload), string(ev.Meta),
			strconv.FormatInt(ev.Created.UnixMilli(), 10))
		if jerr != nil || len(j.f.Tasks) != len(p.Tasks) {
			return nil, err
		}
		return s.finishFanout(ctx, j)
	}
	if len(ev.Runs) != len(p.Tasks) {
		return nil, err
	}
	return ev.Runs, nil
}

// PushEvents pushes many events, in order, so a later event of the batch
// is deduplicated to a run an earlier one created. The events whose runs
// all live in their slot go in one round trip (a run of them between two
// events in steps, in one each); each event is atomic on its own, or
// carried out in steps. The i-th result and error belong to the i-th
// event.
func (s *Store) PushEvents(ctx context.Context, ps []*engine.PushEventParams) ([][]engine.EventRun, []error) {
	res := make([][]engine.EventRun, len(ps))
	errs := make([]error, len(ps))
	for _, p := range ps {
		if err := s.placeEvent(ctx, p); err != nil {
			return res, fillErr(errs, err)
		}
	}
	lo := 0
	for i := 0; i <= len(ps); i++ {
		if i < len(ps) && s.inEventSlot(ps[i]) {
			continue
		}
		s.pushEventsAtOnce(ctx, ps[lo:i], res[lo:i], errs[lo:i])
		if i < len(ps) {
			res[i], errs[i] = s.pushEventSteps(ctx, ps[i])
		}
		lo = i + 1
	}
	return res, errs
}

// pushEventsAtOnce pushes events whose runs all live in their slot with
// push_event.lua, in one pipeline, putting the i-th event's outcome in
// res[i] and errs[i].
func (s *Store) pushEventsAtOnce(ctx context.Context, ps []*engine.PushEventParams, res [][]engine.EventRun, errs []error) {
	calls := make([]scriptCall, len(ps))
	for i, p := range ps {
		calls[i].Keys, calls[i].Args = s.pushEventArgs(p)
	}
	s.runScripts(ctx, pushEventScript, calls)
	for i, c := range calls {
		if c.Err != nil {
			res[i], errs[i] = s.fromEventResend(ctx, ps[i], eventExists(c.Err))
			continue
		}
		res[i], errs[i] = parsePushEvent(ps[i], c.Reply)
	}
}

// eventTaskName is the task t is for.
func eventTaskName(t engine.EventTask) string {
	if t.Run != nil {
		return t.Run.Task
	}
	return t.Task
}

// eventTaskError is what the event records as the task's error: "" when a run is
// attempted.
func eventTaskError(t engine.EventTask) string {
	if t.Error == "" && t.Run == nil {
		return "no run described"
	}
	return t.Error
}
