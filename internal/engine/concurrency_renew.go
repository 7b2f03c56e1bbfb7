package engine

import "time"

// RenewParams renew the lease of the slot a run holds.
type RenewParams struct {
	Task, Group, RunID, Token string
	// Index says which of the task's concurrency limits the group is of
	// (0: the first): the groups of different limits are apart, whatever
	// their names.
	Index int
	// Lease is the new lease, from now.
	Lease time.Duration
}
