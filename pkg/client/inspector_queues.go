package client

import (
	"context"
	"sort"
	"time"
)

// QueueStat is what is queued for one task, summed over the namespace's
// partitions.
type QueueStat struct {
	// Task is the task's name.
	Task string `json:"task"`
	// Queued counts the task's runs waiting in its streams, not yet
	// delivered to a worker. Runs waiting for a retry or a debounce window
	// are not queued until they are due.
	Queued int64 `json:"queued"`
	// InFlight counts runs delivered to a worker and not yet finished,
	// including runs whose lease lapsed and that await redelivery.
	InFlight int64 `json:"inFlight"`
	// OldestQueued is when the oldest queued run was queued (zero when
	// none is).
	OldestQueued time.Time `json:"oldestQueued,omitzero"`
	// Scheduled counts runs waiting for their scheduled time (RunAt,
	// RunIn) or a debounce window; RateLimited runs a rate limit held
	// back; Concurrency runs parked by their concurrency group; Retrying
	// runs waiting for their next attempt after a failed one. None of
	// them is in Queued until it is due.
	Scheduled   int64 `json:"scheduled"`
	RateLimited int64 `json:"rateLimited"`
	Concurrency int64 `json:"concurrency"`
	Retrying    int64 `json:"retrying"`
	// Truncated says a bound (10,000 waiting runs a partition) left some
	// waiting runs uncounted: the four counts above are then lower bounds.
	Truncated bool `json:"truncated,omitempty"`
}

// QueueStats reads the queue figures of tasks, or of every registered task
// when none is named, sorted by name. It reads each task stream's consumer
// group (XINFO GROUPS) and its first undelivered entry, a few pipelined
// commands per task and partition, so it is cheap enough to call at each
// metrics scrape. Where Redis cannot tell a group's lag (after some
// deletions, and on miniredis) the undelivered entries are counted one by
// one, at most 10,000 a stream and partition.
func (in *Inspector) QueueStats(ctx context.Context, tasks ...string) ([]QueueStat, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	if len(tasks) == 0 {
		m, err := in.c.store.ListTasks(ctx)
		if err != nil {
			return nil, in.c.unavailable(ctx, err)
		}
		for name := range m {
			tasks = append(tasks, name)
		}
	}
	st, err := in.c.store.QueueStats(ctx, tasks)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	waits, truncated, err := in.c.store.QueueWaits(ctx)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	out := make([]QueueStat, 0, len(st))
	for name, s := range st {
		w := waits[name]
		out = append(out, QueueStat{Task: name, Queued: s.Queued, InFlight: s.InFlight, OldestQueued: s.Oldest,
			Scheduled: w.Scheduled, RateLimited: w.RateLimited, Concurrency: w.Concurrency, Retrying: w.Retrying,
			Truncated: truncated})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out, nil
}
