package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// saveStepScript stores a durable step's result: lua/save_step.lua.
var saveStepScript = loadScript("save_step")

// StepResult returns a completed step's stored result, or ok=false.
func (s *Store) StepResult(ctx context.Context, runID, name string) ([]byte, bool, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := s.rdb.HGet(ctx, ks.Steps(runID), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// SaveStepResult stores a step's result unless one is stored already, and
// returns the stored one: the first completion of a step wins. Nothing is
// stored for a run whose record is gone.
func (s *Store) SaveStepResult(ctx context.Context, runID, name string, result []byte) ([]byte, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	k := [1 + saveStepKeyCount]string{saveStepKeySteps: ks.Steps(runID), saveStepKeyRun: ks.Run(runID)}
	a := [1 + saveStepArgCount]any{saveStepArgName: name, saveStepArgResult: result}
	v, err := s.runScript(ctx, saveStepScript, k[1:], a[1:]...)
	if err != nil {
		return nil, err
	}
	return []byte(asString(v)), nil
}
