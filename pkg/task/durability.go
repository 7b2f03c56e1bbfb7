package task

import (
	"time"

	"github.com/taskq/taskq/internal/durability"
)

// Durability asks a trigger to return only once Redis confirms that its
// write is held by Replicas replicas (the WAIT command) and, with
// LocalFsync, also written to the master's append-only file on disk
// (WAITAOF, Redis 7.2 and later). The zero value asks for nothing: the
// trigger returns as soon as the master has run the write, as it always
// has. It is set on a client (client.Options.Durability), on a task
// (Options.Durability) or on one trigger (client.WithDurability); the most
// specific one applies. What it promises, and what it does not, is in
// docs/guarantees.md.
type Durability struct {
	// Replicas is how many replicas must acknowledge the write.
	Replicas int
	// Timeout bounds the wait (DurabilityTimeoutDefault when zero). When
	// it passes first, the trigger fails with a *client.DurabilityError
	// that names the run it created.
	Timeout time.Duration
	// LocalFsync also waits for the master to fsync its append-only file
	// (WAITAOF); it needs Redis 7.2 or later with appendonly yes.
	LocalFsync bool
}

// Limits and defaults of Durability.
const (
	// DurabilityTimeoutDefault is the wait of a Durability whose Timeout
	// is zero.
	DurabilityTimeoutDefault = 500 * time.Millisecond
	// DurabilityTimeoutMax bounds Timeout: a trigger holds a connection
	// while it waits.
	DurabilityTimeoutMax = durability.TimeoutMax
	// DurabilityReplicasMax bounds Replicas.
	DurabilityReplicasMax = durability.ReplicasMax
)

// Every durability is checked where it is given: a task's by New and
// NewDefinition, a client's by client.New and a trigger's
// (client.WithDurability) by the trigger, each failing with a
// *ConfigError on the field "durability" that names the limit.

// DurabilitySpec is a task's Durability as plain data, in its Spec.
type DurabilitySpec struct {
	Replicas   int   `json:"replicas,omitempty"`
	TimeoutMs  int64 `json:"timeoutMs,omitempty"`
	LocalFsync bool  `json:"localFsync,omitempty"`
}
