package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// forwardInterval bounds how late a retry can be queued.
const forwardInterval = 250 * time.Millisecond

// forwardBatch is the most runs one call queues.
const forwardBatch = 100

// retryStore is what the forwarder reads and writes in Redis.
type retryStore interface {
	PromoteDue(ctx context.Context, part int, now time.Time, limit int) (moved int, next time.Time, err error)
}

// forwarder queues runs whose retry backoff has elapsed, and debounced
// runs once due, from the retry zset of every partition. It sleeps until
// the earliest scheduled one, at most forwardInterval: an idle worker
// sends one script call per partition per forwardInterval.
type forwarder struct {
	startStop
	store      retryStore
	partitions int
	opTimeout  time.Duration
	clock      task.Clock
	log        *slog.Logger
}

// Start starts forwarding; it is ready at once, the first pass made now.
func (f *forwarder) Start(context.Context) error { return f.begin(f.loop) }

func (f *forwarder) loop(quit <-chan struct{}) {
	wait := time.Duration(0)
	for sleep(quit, wait) {
		wait = f.forward()
	}
}

// forward queues what is due in every partition and returns how long to
// wait for the next.
func (f *forwarder) forward() time.Duration {
	wait := forwardInterval
	for part := range max(f.partitions, 1) {
		wait = min(wait, f.forwardPartition(part))
	}
	return wait
}

// forwardPartition queues what is due in partition part and returns how
// long to wait for its next.
func (f *forwarder) forwardPartition(part int) time.Duration {
	wait := forwardInterval
	ctx, cancel := context.WithTimeout(context.Background(), f.opTimeout)
	defer cancel()
	n, next, err := f.store.PromoteDue(ctx, part, f.clock.Now(), forwardBatch)
	switch {
	case err != nil:
		f.log.Warn("taskq: queueing due retries failed", "partition", part, "err", err)
	case n == forwardBatch:
		wait = 0 // more are due
	case !next.IsZero():
		if d := next.Sub(f.clock.Now()); d < wait {
			wait = max(d, time.Millisecond)
		}
	}
	return wait
}
