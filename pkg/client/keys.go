package client

import (
	"context"
	"errors"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// KeyInfo describes who holds an idempotency key.
type KeyInfo struct {
	Key        string
	OwnerRunID string
	// TTL is the time left when the key was read; 0 when it does not
	// expire.
	TTL time.Duration
	// ExpiresAt is when the key expires (the read's time plus TTL); zero
	// when it does not expire.
	ExpiresAt time.Time
	// The owner's task, strategy and status; empty when the owner's record
	// has already expired.
	Task        string
	Strategy    string
	OwnerStatus Status
	// OwnerAttempt is the owner's attempt (0 before it first starts).
	OwnerAttempt int
	// Owner is a handle to the owning run.
	Owner *RunHandle
}

// lookupKey says who holds key now, or fails with a *StateError of Kind ErrKeyNotHeld.
func (c *Client) lookupKey(ctx context.Context, key string) (*KeyInfo, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	ks, ok, err := c.store.GetKey(ctx, key)
	if err != nil {
		return nil, c.unavailable(ctx, err)
	}
	if !ok {
		return nil, &StateError{Kind: ErrKeyNotHeld, Key: key}
	}
	run, err := c.store.GetRun(ctx, ks.Owner)
	if err != nil && !errors.Is(err, ErrRunNotFound) {
		return nil, c.unavailable(ctx, err)
	}
	return c.keyInfo(ks, run), nil
}

// keyInfo describes a held key and its owner's record (nil when gone).
func (c *Client) keyInfo(ks engine.KeyState, run *engine.Run) *KeyInfo {
	info := &KeyInfo{Key: ks.Key, OwnerRunID: ks.Owner, TTL: ks.TTL, Owner: c.Handle(ks.Owner)}
	if ks.TTL > 0 {
		info.ExpiresAt = c.opts.Clock.Now().Add(ks.TTL)
	}
	if run != nil {
		info.Task, info.Strategy, info.OwnerStatus, info.OwnerAttempt = run.Task, string(run.Strategy), Status(run.Status), run.Attempt
	}
	return info
}
