package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/taskq/taskq/internal/engine"
)

// ErrKeyNotHeld matches every *KeyNotHeldError.
var ErrKeyNotHeld = errors.New("idempotency key not held")

// ErrOwnerFinished matches every *OwnerFinishedError.
var ErrOwnerFinished = errors.New("run has ended")

// KeyNotHeldError says no run owns the key (or the run it named is gone).
type KeyNotHeldError struct {
	Key   string
	RunID string
}

func (e *KeyNotHeldError) Error() string {
	if e.RunID != "" {
		return fmt.Sprintf("run %s not found", e.RunID)
	}
	return fmt.Sprintf("no run holds idempotency key %q", e.Key)
}

// Is makes errors.Is(err, ErrKeyNotHeld) hold, and ErrRunNotFound when a
// run was addressed by ID.
func (e *KeyNotHeldError) Is(target error) bool {
	return target == ErrKeyNotHeld || (e.RunID != "" && target == ErrRunNotFound)
}

// OwnerFinishedError says the run that holds the key (only by retention)
// or the run addressed has ended: it cannot be signalled.
type OwnerFinishedError struct {
	Key    string
	RunID  string
	Status Status
}

func (e *OwnerFinishedError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("idempotency key %q is held by run %s, which has %s and cannot be signalled", e.Key, e.RunID, e.Status)
	}
	return fmt.Sprintf("run %s has %s and cannot be signalled", e.RunID, e.Status)
}

// Is makes errors.Is(err, ErrOwnerFinished) hold.
func (e *OwnerFinishedError) Is(target error) bool { return target == ErrOwnerFinished }

// SignalReceipt says which run a signal reached.
type SignalReceipt struct {
	RunID    string     `json:"runId"`
	SignalID string     `json:"signalId"`
	Owner    *RunHandle `json:"-"`
}

// Signal delivers payload to the run that owns key now: encoded as JSON,
// or as it is when it is a json.RawMessage. Signals are stored in order;
// the handler receives them in that order, again after a redelivery. It
// fails with *KeyNotHeldError when no run holds the key and
// *OwnerFinishedError when the holder has ended. RunHandle.Signal signals
// one run by its ID.
func (c *Client) Signal(ctx context.Context, key string, payload any) (*SignalReceipt, error) {
	raw, err := encodeSignal(payload)
	if err != nil {
		return nil, err
	}
	return c.sendSignal(ctx, key, "", raw)
}

// Signal delivers payload to this run: encoded as JSON, or as it is when
// it is a json.RawMessage.
func (h *RunHandle) Signal(ctx context.Context, payload any) (*SignalReceipt, error) {
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

func (c *Client) sendSignal(ctx context.Context, key, runID string, payload []byte) (*SignalReceipt, error) {
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
		return &SignalReceipt{RunID: res.RunID, SignalID: res.SignalID, Owner: c.Handle(res.RunID)}, nil
	case res.Reason == "finished":
		return nil, &OwnerFinishedError{Key: key, RunID: res.RunID, Status: Status(res.Status)}
	case res.Reason == "full":
		return nil, &LimitError{What: "signals of run " + res.RunID, Size: c.opts.MaxSignals, Limit: c.opts.MaxSignals, Unit: "signals"}
	case res.Reason == "missing" && runID == "":
		// The key outlived its owner's record: nobody can take the signal.
		return nil, &KeyNotHeldError{Key: key}
	default:
		return nil, &KeyNotHeldError{Key: key, RunID: runID}
	}
}
