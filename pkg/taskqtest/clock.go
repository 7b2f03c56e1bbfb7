package taskqtest

import (
	"sync"
	"time"
)

// Clock is the harness's clock: it stands still until Harness.Advance moves
// it. It is a task.Clock, and every client and
// worker the harness builds tells the time by it, so the times taskq
// computes (retry due times, debounce windows, run timestamps, retention
// cut-offs) move only when the test says so, in step with the expiry of
// Redis keys.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *Clock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
