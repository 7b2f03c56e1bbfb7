package client

import (
	"context"
	"errors"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// KeyInfo describes who holds an idempotency key.
type KeyInfo struct {
	Key        string        `json:"key"`
	OwnerRunID string        `json:"ownerRunId"`
	TTL        time.Duration `json:"ttl"`
	// The owner's task, strategy and status; empty when the owner's record
	// has already expired.
	Task        string `json:"task,omitempty"`
	Strategy    string `json:"strategy,omitempty"`
	OwnerStatus Status `json:"ownerStatus,omitempty"`
	// OwnerAttempt is the owner's attempt (0 before it first starts).
	OwnerAttempt int `json:"ownerAttempt,omitempty"`
	// Owner is a handle to the owning run.
	Owner *RunHandle `json:"-"`
}

// Active reports whether the owner is still queued or running (and so can
// be signalled), rather than holding the key by retention.
func (k *KeyInfo) Active() bool { return k.OwnerStatus != "" && !k.OwnerStatus.Terminal() }

// LookupKey says who holds key now, or fails with *KeyNotHeldError.
func (c *Client) LookupKey(ctx context.Context, key string) (*KeyInfo, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	ks, ok, err := c.store.GetKey(ctx, key)
	if err != nil {
		return nil, c.unavailable(ctx, err)
	}
	if !ok {
		return nil, &KeyNotHeldError{Key: key}
	}
	run, err := c.store.GetRun(ctx, ks.Owner)
	if err != nil && !errors.Is(err, ErrRunNotFound) {
		return nil, c.unavailable(ctx, err)
	}
	return c.keyInfo(ks, run), nil
}

// keyInfo describes a held key and its owner's record (nil when gone).
func (c *Client) keyInfo(ks redisstore.KeyState, run *redisstore.Run) *KeyInfo {
	info := &KeyInfo{Key: ks.Key, OwnerRunID: ks.Owner, TTL: ks.TTL, Owner: c.Handle(ks.Owner)}
	if run != nil {
		info.Task, info.Strategy, info.OwnerStatus, info.OwnerAttempt = run.Task, string(run.Strategy), Status(run.Status), run.Attempt
	}
	return info
}
