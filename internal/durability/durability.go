// Package durability holds the bounds of a trigger's durable
// acknowledgement (task.Durability), which package task (a task's
// Options.Durability), the client (its Options.Durability and
// client.WithDurability) and the command line check alike; each words
// what is wrong in its own error.
package durability

import (
	"fmt"
	"time"
)

// Bounds of a durability.
const (
	// TimeoutMax bounds the wait: a trigger holds a connection while it
	// waits.
	TimeoutMax = time.Minute
	// ReplicasMax bounds the replicas waited for.
	ReplicasMax = 100
)

// Problem says, naming the limit, what is wrong with a durability that
// waits for replicas replicas for at most timeout (0: the default); ""
// when nothing is.
func Problem(replicas int, timeout time.Duration) string {
	switch {
	case replicas < 0 || replicas > ReplicasMax:
		return fmt.Sprintf("replicas %d is outside [0, %d]", replicas, ReplicasMax)
	case timeout < 0 || timeout > TimeoutMax:
		return fmt.Sprintf("timeout %s is outside [0, %s]", timeout, TimeoutMax)
	case timeout > 0 && timeout < time.Millisecond:
		return fmt.Sprintf("timeout %s is below 1ms, the unit Redis waits in", timeout)
	}
	return ""
}
