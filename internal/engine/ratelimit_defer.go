package engine

import "time"

// Deferral is a delivery a rate limit refused, to be queued again at Due.
type Deferral struct {
	Delivery
	Due time.Time
	// Reason is why the run waits, shown as the run's Waiting until it is
	// queued again: `rate limit "emails" key "acme"`.
	Reason string
}

// DeferResult is the answer for one Deferral.
type DeferResult struct {
	// Held says the run waits in its partition's retry zset, still queued,
	// with no attempt begun; its delivery is acknowledged and deleted.
	Held bool
	// Reason says why it was not held back: "missing", "stale" or the
	// run's terminal status; the delivery is dropped then too.
	Reason string
}
