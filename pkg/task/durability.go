package task

import (
	"fmt"
	"time"
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
	DurabilityTimeoutMax = time.Minute
	// DurabilityReplicasMax bounds Replicas.
	DurabilityReplicasMax = 100
)

// Validate says, as a *ConfigError naming the field and the limit, what
// is wrong with d.
func (d Durability) Validate() error {
	bad := func(format string, args ...any) error {
		return &ConfigError{Field: "durability", Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case d.Replicas < 0 || d.Replicas > DurabilityReplicasMax:
		return bad("replicas %d is outside [0, %d]", d.Replicas, DurabilityReplicasMax)
	case d.Timeout < 0 || d.Timeout > DurabilityTimeoutMax:
		return bad("timeout %s is outside [0, %s]", d.Timeout, DurabilityTimeoutMax)
	case d.Timeout > 0 && d.Timeout < time.Millisecond:
		return bad("timeout %s is below 1ms, the unit Redis waits in", d.Timeout)
	}
	return nil
}

// DurabilitySpec is a task's Durability as plain data, in its Spec.
type DurabilitySpec struct {
	Replicas   int   `json:"replicas,omitempty"`
	TimeoutMs  int64 `json:"timeoutMs,omitempty"`
	LocalFsync bool  `json:"localFsync,omitempty"`
}
