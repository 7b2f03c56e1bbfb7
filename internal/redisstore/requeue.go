package redisstore

import "context"

// requeueScript gives a running run back to the queue: lua/requeue.lua.
var requeueScript = loadScript("requeue", "record", "stream")

// Requeue gives a running attempt's run back to the queue at once.
func (s *Store) Requeue(ctx context.Context, runID, task string, attempt int) (FinishResult, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if err != nil {
		return FinishResult{}, err
	}
	k := [1 + requeueKeyCount]string{requeueKeyRun: ks.Run(runID), requeueKeyStream: ks.Stream(task)}
	a := [1 + requeueArgCount]any{requeueArgRunID: runID, requeueArgAttempt: attempt, requeueArgGroup: GroupName}
	v, err := s.runScript(ctx, requeueScript, k[1:], a[1:]...)
	if err != nil {
		return FinishResult{}, err
	}
	return s.parseWritten("requeue", v)
}
