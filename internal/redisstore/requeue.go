package redisstore

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// requeueScript gives a running run back to the queue: lua/requeue.lua.
var requeueScript = loadScript("requeue")

// Requeue gives a running attempt's run back to the queue at once. The
// attempt goes into the run's attempt history as "requeued".
func (s *Store) Requeue(ctx context.Context, runID, task string, attempt int) (engine.FinishResult, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if err != nil {
		return engine.FinishResult{}, err
	}
	k := [1 + requeueKeyCount]string{requeueKeyRun: ks.Run(runID), requeueKeyStream: ks.Stream(task)}
	a := [1 + requeueArgCount]any{requeueArgRunID: runID, requeueArgAttempt: attempt, requeueArgGroup: GroupName,
		requeueArgNow: time.Now().UnixMilli(), requeueArgPrefix: ks.Prefix()}
	v, err := s.runScript(ctx, requeueScript, k[1:], a[1:]...)
	if err != nil {
		return engine.FinishResult{}, err
	}
	return s.parseWritten("requeue", v)
}
