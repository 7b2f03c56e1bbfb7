package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// cancelScript cancels a run: lua/cancel.lua.
var cancelScript = loadScript("cancel")

// Cancel cancels a run that has not ended.
// A run ID that names no partition of the namespace is a run that does
// not exist: the result is "missing".
func (s *Store) Cancel(ctx context.Context, runID, reason string, now time.Time) (engine.FinishResult, error) {
	return s.CancelWithNotice(ctx, runID, reason, "", now)
}

// CancelWithNotice is Cancel whose cancel notice carries notice after the
// run ID and a "|", for the handler to learn why (see
// ConcurrencyCancelReason).
func (s *Store) CancelWithNotice(ctx context.Context, runID, reason, notice string, now time.Time) (engine.FinishResult, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return engine.FinishResult{Status: "missing"}, nil
	}
	if err != nil {
		return engine.FinishResult{}, err
	}
	k := [1 + cancelKeyCount]string{cancelKeyRun: ks.Run(runID)}
	a := [1 + cancelArgCount]any{
		cancelArgRunID:  runID,
		cancelArgNow:    unixMS(now),
		cancelArgReason: reason,
		cancelArgGroup:  GroupName,
		cancelArgPrefix: ks.Prefix(),
		cancelArgNotice: notice,
	}
	v, err := s.runScript(ctx, cancelScript, k[1:], a[1:]...)
	if err != nil {
		return engine.FinishResult{}, err
	}
	return s.parseWritten("cancel", v)
}
