package wire

import (
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// Key is a held idempotency key as the HTTP API (GET /api/v1/keys,
// /api/v1/keys/{key}) and the command line's -o json write it: the owner
// is runId, the time left ttlMs (0: no expiry) and expiresAt (UTC, absent
// without expiry); task, strategy, status and attempt are the owner's,
// absent once its record has expired.
type Key struct {
	Key       string        `json:"key"`
	RunID     string        `json:"runId"`
	TTLMs     int64         `json:"ttlMs"`
	ExpiresAt *time.Time    `json:"expiresAt,omitempty"`
	Task      string        `json:"task,omitempty"`
	Strategy  string        `json:"strategy,omitempty"`
	Status    client.Status `json:"status,omitempty"`
	Attempt   *int          `json:"attempt,omitempty"`
}

// KeyOf is k as JSON.
func KeyOf(k *client.KeyInfo) Key {
	v := Key{Key: k.Key, RunID: k.OwnerRunID, TTLMs: k.TTL.Milliseconds(),
		Task: k.Task, Strategy: k.Strategy, Status: k.OwnerStatus}
	if !k.ExpiresAt.IsZero() {
		t := k.ExpiresAt.UTC().Truncate(time.Millisecond)
		v.ExpiresAt = &t
	}
	if k.OwnerStatus != "" {
		a := k.OwnerAttempt
		v.Attempt = &a
	}
	return v
}

// KeysOf is ks as JSON, [] when there are none.
func KeysOf(ks []*client.KeyInfo) []Key {
	out := make([]Key, len(ks))
	for i, k := range ks {
		out[i] = KeyOf(k)
	}
	return out
}
