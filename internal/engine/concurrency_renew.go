package engine

import "time"

// RenewParams renew the lease of the slot a run holds.
type RenewParams struct {
	Task, Group, RunID, Token string
	// Lease is the new lease, from now.
	Lease time.Duration
}
