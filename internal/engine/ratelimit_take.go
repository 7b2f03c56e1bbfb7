package engine

import "time"

// RateTake is one request for units of a rate limit.
type RateTake struct {
	// Name and Key name the limit and the value of its key ("" without).
	Name, Key string
	// Limit is the most units taken in any window of Period.
	Limit  int
	Period time.Duration
	// Units is what the request takes (1 .. Limit).
	Units int
	// Token is unique to the request: ReturnRateLimits gives back by it.
	Token string
}

// RateTakeResult is the answer to one RateTake.
type RateTakeResult struct {
	// Taken says the units were taken; Used is then the units in the
	// window, these included.
	Taken bool
	Used  int
	// Wait, when not taken, is how long until enough units leave the
	// window for the request, by the clock the script used.
	Wait time.Duration
}
