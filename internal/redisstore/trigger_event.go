package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/taskq/taskq/internal/engine"
)

// triggerEventScript triggers the runs of an event's tasks under one
// prefix, step 2 of a fan-out in steps: lua/trigger_event.lua.
var triggerEventScript = loadScript("trigger_event")

// triggerEvent runs step 2 of j for its tasks at the indexes tasks, whose
// runs live under prefix, and puts their outcomes in runs. A task Redis
// cannot trigger for good (a key of the wrong type, a run ID taken) gets
// the error as its outcome, and in refused; anything else stops the
// fan-out, pending.
func (s *Store) triggerEvent(ctx context.Context, j *fanoutJob, prefix string, tasks []int, runs []engine.EventRun, refused []error) error {
	k := s.keys.under(prefix)
	h := [1 + triggerEventArgCount]any{
		triggerEventArgPrefix:        prefix,
		triggerEventArgPayload:       j.payload,
		triggerEventArgMeta:          j.meta,
		triggerEventArgNow:           j.now,
		triggerEventArgRetention:     j.f.Retention,
		triggerEventArgSource:        engine.SourceEventPrefix + j.id,
		triggerEventArgDigest:        engine.InputDigest(j.payload),
		triggerEventArgSuppressedCap: s.suppressedCap(),
	}
	keys := make([]string, triggerEventKeyCount, triggerEventKeyCount+triggerEventItemKeyCount*len(tasks))
	args := append(make([]any, 0, triggerEventArgCount+triggerEventItemArgCount*len(tasks)), h[1:]...)
	for _, i := range tasks {
		t := &j.f.Tasks[i]
		idem := k.Runs() // a placeholder the script never touches
		if t.Strategy != engine.StrategyNone {
			idem = k.IdempotencyKey(t.Key)
		}
		ik := [triggerEventItemKeyCount]string{
			triggerEventItemKeyMarker:      k.EventTrigger(j.id, t.Task),
			triggerEventItemKeyRun:         k.Run(t.RunID),
			triggerEventItemKeyStream:      k.Stream(t.Task),
			triggerEventItemKeyRuns:        k.Runs(),
			triggerEventItemKeyIdempotency: idem,
		}
		// The same fields, in the same units, as push_event.lua takes.
		ia := [triggerEventItemArgCount]any{
			triggerEventItemArgTask:           t.Task,
			triggerEventItemArgRunID:          t.RunID,
			triggerEventItemArgIdempotencyKey: t.Key,
			triggerEventItemArgSpec: settingsSpec(t.Strategy, t.Hold, t.Retries, t.Timeout, j.now, t.MaxDeliveries, t.Retain,
				t.RunRetention),
		}
		keys, args = append(keys, ik[:]...), append(args, ia[:]...)
	}
	// The priorities, after the tasks', when one is above the default.
	if slices.ContainsFunc(tasks, func(i int) bool { return j.f.Tasks[i].Priority > 0 }) {
		for _, i := range tasks {
			args = append(args, max(j.f.Tasks[i].Priority, engine.PriorityDefault))
		}
	}
	v, err := s.runScript(ctx, triggerEventScript, keys, args...)
	if err != nil {
		return err
	}
	r, err := asSlice(v)
	if err != nil || len(r) != len(tasks) {
		return fmt.Errorf("redisstore: trigger_event: unexpected reply %v", v)
	}
	for n, i := range tasks {
		t := &j.f.Tasks[i]
		if e, ok := r[n].(error); ok {
			err := s.named("trigger_event", scriptError(e))
			if !errors.Is(err, engine.ErrWrongType) && !errors.Is(err, engine.ErrRunExists) {
				return err
			}
			runs[i] = engine.EventRun{Task: t.Task, Outcome: engine.EventRunError, IdempotencyKey: t.Key, Error: err.Error()}
			refused[i] = err
			continue
		}
		item, err := asSlice(r[n])
		if err != nil || len(item) != 2 {
			return fmt.Errorf("redisstore: trigger_event: unexpected reply %v for task %s", r[n], t.Task)
		}
		runs[i] = engine.EventRun{Task: t.Task, Outcome: asString(item[0]), RunID: asString(item[1]), IdempotencyKey: t.Key}
	}
	return nil
}
