// Package runstats counts the run statistics a process sees (the queue
// wait and run time of the attempts a worker runs, the duplicates a
// client's triggers meet) in memory, per minute, task and field, and adds
// them to Redis now and then in one pipeline (redisstore.AddRunStats), so
// that the scripts on a run's path pay nothing for them.
//
// The counts reach Redis at most one flush interval late, and a process
// that crashes loses the counts it had not flushed. A flush that fails
// keeps its counts for the next one; a Recorder holds at most MaxMinutes
// minutes of counts, dropping the oldest beyond them.
package runstats

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Store is where a Recorder adds its counts.
type Store interface {
	AddRunStats(ctx context.Context, batch engine.RunStatsBatch) error
}

// MaxMinutes is how many minutes of counts a Recorder keeps unflushed.
const MaxMinutes = 3

// DefaultInterval is how often a process flushes its counts by default.
const DefaultInterval = 2 * time.Second

// Recorder counts run statistics in memory until Flush adds them to its
// store. Its methods are safe for concurrent use; Wait, Ran and Duplicate
// do nothing on a nil Recorder.
type Recorder struct {
	store Store
	log   *slog.Logger

	mu     sync.Mutex
	counts map[engine.StatsCounter]int64
	// minutes holds the minutes with counts, each with how many counters.
	minutes map[int64]int
	// expired holds the minutes whose hashes this process has given their
	// expiry (a flush sets it the first time it writes a minute).
	expired map[int64]bool
	// failing: the last flush failed (the first failure of a run of them
	// is logged as a warning, the others at debug level).
	failing bool
	// flushing serializes flushes.
	flushing sync.Mutex
}

// New returns a Recorder adding its counts to store; log (nil: discard)
// hears of failed flushes.
func New(store Store, log *slog.Logger) *Recorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Recorder{store: store, log: log, counts: map[engine.StatsCounter]int64{},
		minutes: map[int64]int{}, expired: map[int64]bool{}}
}

// Wait counts an attempt of task begun at now after waiting d in its
// stream.
func (r *Recorder) Wait(now time.Time, task string, d time.Duration) {
	r.add(engine.StatsCounter{Minute: engine.StatsMinuteOf(now), Task: task, Kind: engine.StatsKindWait,
		Bucket: engine.StatsBucket(d.Milliseconds())}, 1)
}

// Ran counts an attempt of task that ended at now with outcome after
// running d.
func (r *Recorder) Ran(now time.Time, task string, outcome engine.Outcome, d time.Duration) {
	kind := engine.StatsKindSucceeded
	switch outcome {
	case engine.OutcomeFailed:
		kind = engine.StatsKindFailed
	case engine.OutcomeRetry:
		kind = engine.StatsKindRetried
	case engine.OutcomeWait:
		return // the run goes on: it is counted when it ends
	}
	r.add(engine.StatsCounter{Minute: engine.StatsMinuteOf(now), Task: task, Kind: kind,
		Bucket: engine.StatsBucket(d.Milliseconds())}, 1)
}

// Duplicate counts a trigger of task, at now, that created no run because
// its key was held.
func (r *Recorder) Duplicate(now time.Time, task string) {
	r.add(engine.StatsCounter{Minute: engine.StatsMinuteOf(now), Task: task, Kind: engine.StatsKindDuplicate}, 1)
}

func (r *Recorder) add(c engine.StatsCounter, n int64) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.addLocked(c, n)
	r.mu.Unlock()
}

// addLocked adds n to c, dropping the oldest minute's counts when more
// than MaxMinutes minutes hold some.
func (r *Recorder) addLocked(c engine.StatsCounter, n int64) {
	if _, ok := r.counts[c]; !ok {
		if _, ok := r.minutes[c.Minute]; !ok && len(r.minutes) >= MaxMinutes {
			oldest := c.Minute
			for m := range r.minutes {
				oldest = min(oldest, m)
			}
			if oldest == c.Minute {
				return // older than every minute kept
			}
			for k := range r.counts {
				if k.Minute == oldest {
					delete(r.counts, k)
				}
			}
			delete(r.minutes, oldest)
		}
		r.minutes[c.Minute]++
	}
	r.counts[c] += n
}

// Flush adds the counts gathered since the last flush to the store. On
// failure they are kept for the next flush (within MaxMinutes), and the
// error is logged and returned; a caller need do nothing with it.
func (r *Recorder) Flush(ctx context.Context) error {
	r.flushing.Lock()
	defer r.flushing.Unlock()
	r.mu.Lock()
	if len(r.counts) == 0 {
		r.mu.Unlock()
		return nil
	}
	batch := engine.RunStatsBatch{Counts: r.counts, Expire: map[int64]bool{}}
	for m := range r.minutes {
		if !r.expired[m] {
			batch.Expire[m] = true
		}
	}
	r.counts, r.minutes = map[engine.StatsCounter]int64{}, map[int64]int{}
	r.mu.Unlock()

	err := r.store.AddRunStats(ctx, batch)

	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		for c, n := range batch.Counts {
			r.addLocked(c, n)
		}
		if !r.failing {
			r.log.Warn("taskq: writing the run statistics failed; they are kept for the next try", "err", err)
		} else {
			r.log.Debug("taskq: writing the run statistics failed again", "err", err)
		}
		r.failing = true
		return err
	}
	r.failing = false
	newest := int64(0)
	for m := range batch.Expire {
		r.expired[m] = true
	}
	for m := range r.expired {
		newest = max(newest, m)
	}
	for m := range r.expired {
		if m < newest-2*MaxMinutes {
			delete(r.expired, m)
		}
	}
	return nil
}

// Run flushes every interval until quit is closed, then once more within
// timeout; each flush is bounded by timeout.
func (r *Recorder) Run(quit <-chan struct{}, interval, timeout time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-quit:
			r.flushWithin(timeout)
			return
		case <-t.C:
			r.flushWithin(timeout)
		}
	}
}

func (r *Recorder) flushWithin(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_ = r.Flush(ctx)
}
