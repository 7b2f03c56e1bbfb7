package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// signalScript appends a signal to a run's signal stream: lua/signal.lua.
var signalScript = loadScript("signal")

// SignalKey delivers payload to the run that owns key now.
func (s *Store) SignalKey(ctx context.Context, key, signalID string, payload []byte, maxSignals int) (engine.SignalResult, error) {
	ks, err := s.keysOfKey(ctx, key)
	if err != nil {
		return engine.SignalResult{}, err
	}
	return s.signal(ctx, ks, ks.IdempotencyKey(key), "key", "", signalID, payload, maxSignals)
}

// SignalRun delivers payload to the run with the given ID.
// A run ID that names no partition of the namespace is a run that does
// not exist ("missing").
func (s *Store) SignalRun(ctx context.Context, runID, signalID string, payload []byte, maxSignals int) (engine.SignalResult, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return engine.SignalResult{Reason: "missing"}, nil
	}
	if err != nil {
		return engine.SignalResult{}, err
	}
	return s.signal(ctx, ks, ks.Run(runID), "run", runID, signalID, payload, maxSignals)
}

func (s *Store) signal(ctx context.Context, ks Keys, key, mode, runID, signalID string, payload []byte, maxSignals int) (engine.SignalResult, error) {
	if maxSignals == 0 {
		maxSignals = engine.MaxSignalsDefault
	}
	k := [1 + signalKeyCount]string{signalKeyTarget: key}
	a := [1 + signalArgCount]any{
		signalArgMode:       mode,
		signalArgRunID:      runID,
		signalArgSignalID:   signalID,
		signalArgPayload:    payload,
		signalArgPrefix:     ks.Prefix(),
		signalArgMaxSignals: maxSignals,
	}
	v, err := s.runScript(ctx, signalScript, k[1:], a[1:]...)
	if err != nil {
		return engine.SignalResult{}, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return engine.SignalResult{}, fmt.Errorf("redisstore: signal: unexpected reply %v", v)
	}
	if asInt(r[0]) == 1 {
		return engine.SignalResult{Delivered: true, RunID: asString(r[1]), SignalID: asString(r[2])}, nil
	}
	res := engine.SignalResult{Reason: asString(r[1])}
	if len(r) > 3 {
		res.RunID, res.Status = asString(r[2]), asString(r[3])
	}
	return res, nil
}

// ReadSignals returns up to count signals of a run after cursor ("0" for
// the first), blocking up to block when none is there yet (block < 0:
// do not block).
func (s *Store) ReadSignals(ctx context.Context, runID, cursor string, count int, block time.Duration) ([]engine.Signal, error) {
	if cursor == "" {
		cursor = "0"
	} else if _, ok := parseStreamID(cursor); !ok && cursor != "0" {
		return nil, fmt.Errorf("%w: %q (of a signals listing)", engine.ErrInvalidCursor, cursor)
	}
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	res, err := s.rdb.XRead(ctx, &redis.XReadArgs{
		Streams: []string{ks.Signals(runID), cursor}, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []engine.Signal
	for _, st := range res {
		for _, m := range st.Messages {
			id, _ := m.Values[signalEntryID].(string)
			p, _ := m.Values[signalEntryPayload].(string)
			sent, _ := entryTime(m.ID)
			out = append(out, engine.Signal{Cursor: m.ID, ID: id, Payload: []byte(p), Sent: sent})
		}
	}
	return out, nil
}
