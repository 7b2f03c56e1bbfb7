package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// rescheduleScript moves a scheduled run to a new due time:
// lua/reschedule.lua.
var rescheduleScript = loadScript("reschedule")

// Reschedule moves a run created with a delay (EnqueueParams.Delay) and
// not yet due to a new due time, shifting its key's expiry with it. A run
// ID that names no partition of the namespace is "missing".
func (s *Store) Reschedule(ctx context.Context, runID string, due time.Time) (engine.RescheduleResult, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return engine.RescheduleResult{Why: "missing"}, nil
	}
	if err != nil {
		return engine.RescheduleResult{}, err
	}
	k := [1 + rescheduleKeyCount]string{rescheduleKeyRun: ks.Run(runID), rescheduleKeyRetry: ks.Retry()}
	a := [1 + rescheduleArgCount]any{rescheduleArgRunID: runID, rescheduleArgDue: unixMS(due), rescheduleArgPrefix: ks.Prefix()}
	v, err := s.runScript(ctx, rescheduleScript, k[1:], a[1:]...)
	if err != nil {
		return engine.RescheduleResult{}, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return engine.RescheduleResult{}, fmt.Errorf("redisstore: reschedule: unexpected reply %v", v)
	}
	if asInt(r[0]) != 1 {
		return engine.RescheduleResult{Why: asString(r[1])}, nil
	}
	prev, _ := strconv.ParseFloat(asString(r[1]), 64)
	return engine.RescheduleResult{Moved: true, Previous: fromMS(int64(prev))}, nil
}
