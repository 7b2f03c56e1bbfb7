package redisstore

import (
	"context"
	"time"
)

// cancelScript cancels a run: lua/cancel.lua.
var cancelScript = loadScript("cancel", "record", "stream", "ending")

// Cancel cancels a run that has not ended.
func (s *Store) Cancel(ctx context.Context, runID, reason string, now time.Time) (FinishResult, error) {
	k := [1 + cancelKeyCount]string{cancelKeyRun: s.keys.Run(runID)}
	a := [1 + cancelArgCount]any{
		cancelArgRunID:  runID,
		cancelArgNow:    unixMS(now),
		cancelArgReason: reason,
		cancelArgGroup:  GroupName,
		cancelArgPrefix: s.keys.Prefix(),
	}
	v, err := s.runScript(ctx, cancelScript, k[1:], a[1:]...)
	if err != nil {
		return FinishResult{}, err
	}
	return s.parseWritten("cancel", v)
}
