package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/taskq/taskq/internal/engine"
)

// ErrKeyNotHeld is the Kind of a *StateError saying no run holds a key
// (or that the run a signal named is gone).
var ErrKeyNotHeld = errors.New("idempotency key not held")

// ErrOwnerFinished is the Kind of a *StateError saying the run a signal
// was for has ended.
var ErrOwnerFinished = errors.New("run has ended")

// Signal delivers payload to the run that owns key now: encoded as JSON,
// or as it is when it is a json.RawMessage. Signals are stored in order;
// the handler receives them in that order, again after a redelivery. It
// fails with a *StateError of Kind ErrKeyNotHeld when no run holds the key
// and ErrOwnerFinished when the holder has ended. It returns a handle to
// the run that took the signal, whose TriggerInfo says what the call did
// (Outcome OutcomeSignalled, IdempotencyKey key, SignalID the signal's ID),
// as a trigger under the signal conflict policy's would. RunHandle.Signal
// signals one run by its ID.
func (c *Client) Signal(ctx context.Context, key string, payload any) (*RunHandle, error) {
	raw, err := encodeSignal(payload)
	if err != nil {
		return nil, err
	}
	return c.sendSignal(ctx, key, "", raw)
}

// Signal delivers payload to this run: encoded as JSON, or as it is when
// it is a json.RawMessage. It returns a handle to the run whose
// TriggerInfo().SignalID is the signal's ID (Outcome OutcomeSignalled).
func (h *RunHandle) Signal(ctx context.Context, payload any) (*RunHandle, error) {
	raw, err := encodeSignal(payload)
	if err != nil {
		return nil, err
	}
	return h.c.sendSignal(ctx, "", h.id, raw)
}

// encodeSignal encodes a signal's payload; a json.RawMessage is sent as
// it is (and checked to be JSON by sendSignal).
func encodeSignal(payload any) ([]byte, error) {
	if raw, ok := payload.(json.RawMessage); ok {
		return raw, nil
	}
	raw, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("signal: encode payload: %w", err)
	}
	return raw, nil
}

func (c *Client) sendSignal(ctx context.Context, key, runID string, payload []byte) (*RunHandle, error) {
	if err := validJSON("signal payload", payload); err != nil {
		return nil, err
	}
	if len(payload) > c.opts.MaxInputBytes {
		return nil, &LimitError{What: "signal payload", Size: len(payload), Limit: c.opts.MaxInputBytes}
	}
	sid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	var res engine.SignalResult
	if runID != "" {
		res, err = c.store.SignalRun(ctx, runID, sid.String(), payload, c.opts.MaxSignals)
	} else {
		res, err = c.store.SignalKey(ctx, key, sid.String(), payload, c.opts.MaxSignals)
	}
	if err != nil {
		return nil, c.unavailable(ctx, err)
	}
	switch {
	case res.Delivered:
		return &RunHandle{id: res.RunID, c: c, trigger: TriggerInfo{Outcome: OutcomeSignalled, IdempotencyKey: key, SignalID: res.SignalID}}, nil
	case res.Reason == "finished":
		return nil, &StateError{Kind: ErrOwnerFinished, Key: key, RunID: res.RunID, Status: Status(res.Status)}
	case res.Reason == "full":
		return nil, &LimitError{What: "signals of run " + res.RunID, Size: c.opts.MaxSignals, Limit: c.opts.MaxSignals, Unit: "signals"}
	case res.Reason == "missing" && runID == "":
		// The key outlived its owner's record: nobody can take the signal.
		return nil, &StateError{Kind: ErrKeyNotHeld, Key: key}
	default:
		return nil, &StateError{Kind: ErrKeyNotHeld, Key: key, RunID: runID}
	}
}
