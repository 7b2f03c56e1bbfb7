package redisstore

import (
	"context"
	"encoding/json"
)

// storeEventScript stores an event with its pending fan-out, step 1 of a
// fan-out in steps: lua/store_event.lua.
var storeEventScript = loadScript("store_event")

// storeEvent runs step 1 of j, an event of key eventKey.
func (s *Store) storeEvent(ctx context.Context, j *fanoutJob, eventKey string) error {
	raw, err := json.Marshal(j.f)
	if err != nil {
		return err
	}
	k := s.keys.under(j.prefix)
	keys := [1 + storeEventKeyCount]string{
		storeEventKeyEvent:         k.Event(j.id),
		storeEventKeyEvents:        k.Events(),
		storeEventKeyEventKeyIndex: k.EventKeyIndex(eventKey),
		storeEventKeyFanouts:       k.Fanouts(),
	}
	args := [1 + storeEventArgCount]any{
		storeEventArgEventID:   j.id,
		storeEventArgEventKey:  eventKey,
		storeEventArgPayload:   j.payload,
		storeEventArgMeta:      j.meta,
		storeEventArgNow:       j.now,
		storeEventArgRetention: j.f.Retention,
		storeEventArgFanout:    raw,
	}
	_, err = s.runScript(ctx, storeEventScript, keys[1:], args[1:]...)
	return eventExists(err)
}
