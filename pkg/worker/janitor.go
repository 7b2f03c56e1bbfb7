package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// sweepBatch is the most index entries one sweep call looks at.
const sweepBatch = 500

// sweepStore is what the janitor writes in Redis.
type sweepStore interface {
	SweepRuns(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error)
}

// janitor removes index entries whose run records have expired, from the
// runs index of every partition, every interval, in batches with a cursor,
// starting at a random offset in time so a fleet of workers does not sweep
// in lockstep.
type janitor struct {
	startStop
	store      sweepStore
	partitions int
	every      time.Duration
	opTimeout  time.Duration
	clock      task.Clock
	log        *slog.Logger
}

// Start starts sweeping; it is ready at once, the first sweep due within
// one interval.
func (j *janitor) Start(context.Context) error {
	first := time.Duration(rand.Int64N(int64(j.every)))
	return j.begin(func(quit <-chan struct{}) {
		for wait := first; sleep(quit, wait); wait = j.every {
			for part := range max(j.partitions, 1) {
				j.sweep(quit, part)
			}
		}
	})
}

// sweep makes one pass over the index of partition part, batch by batch,
// until it has looked at every entry old enough or quit closes.
func (j *janitor) sweep(quit <-chan struct{}, part int) {
	// Entries younger than one interval belong to runs that cannot have
	// expired yet; skipping them keeps each sweep short.
	cutoff := j.clock.Now().Add(-j.every)
	offset := 0
	for {
		ctx, cancel := context.WithTimeout(context.Background(), j.opTimeout)
		removed, looked, err := j.store.SweepRuns(ctx, part, cutoff, offset, sweepBatch)
		cancel()
		if err != nil {
			j.log.Warn("taskq: sweeping runs index failed", "partition", part, "err", err)
			return
		}
		offset += looked - removed
		if looked < sweepBatch {
			return
		}
		select {
		case <-quit:
			return
		default:
		}
	}
}
