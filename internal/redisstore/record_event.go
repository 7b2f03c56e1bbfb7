package redisstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/taskq/taskq/internal/engine"
)

// recordEventScript records the outcomes of a fan-out, step 3 of a fan-out
// in steps: lua/record_event.lua.
var recordEventScript = loadScript("record_event")

// recordEvent runs step 3 of j with the outcomes runs. It returns the
// outcomes the event records: runs, or those a racing recorder recorded
// first (the same, for every task that got a trigger).
func (s *Store) recordEvent(ctx context.Context, j *fanoutJob, runs []engine.EventRun) ([]engine.EventRun, error) {
	raw, err := json.Marshal(runs)
	if err != nil {
		return nil, err
	}
	k := s.keys.under(j.prefix)
	keys := [1 + recordEventKeyCount]string{
		recordEventKeyEvent:   k.Event(j.id),
		recordEventKeyFanouts: k.Fanouts(),
	}
	args := [1 + recordEventArgCount]any{
		recordEventArgEventID: j.id,
		recordEventArgRuns:    raw,
	}
	v, err := s.runScript(ctx, recordEventScript, keys[1:], args[1:]...)
	if err != nil {
		return nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) == 0 {
		return nil, fmt.Errorf("redisstore: record_event: unexpected reply %v", v)
	}
	if asInt(r[0]) != 0 || len(r) < 2 {
		// Recorded now, or the event is gone (a recovery after its
		// retention): either way these are the outcomes.
		return runs, nil
	}
	var first []engine.EventRun
	if err := json.Unmarshal([]byte(asString(r[1])), &first); err != nil {
		return nil, fmt.Errorf("event %s: runs: %w", j.id, err)
	}
	return first, nil
}
