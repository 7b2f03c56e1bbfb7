package taskqtest

import (
	"sync"
	"time"
)

// clock is the harness's clock: it stands still until Harness.Advance moves
// it. It is the task.Clock of every client and worker the harness builds
// (ClientOptions, StartWorker), so the times taskq computes (retry due
// times, debounce windows, run timestamps, retention cut-offs) move only
// when the test says so, in step with the expiry of Redis keys.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's current time.
func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
