package worker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// sweepBatch is the most index entries one sweep call looks at.
const sweepBatch = 500

// fanoutEvery is how often the janitor looks for fan-outs left pending.
// With none pending a look is one script call per partition that reads an
// empty sorted set, so that every worker of a fleet can afford it.
const fanoutEvery = 10 * time.Second

// fanoutBatch is the most pending fan-outs one call takes per partition,
// and fanoutBatches bounds the calls of one look.
const (
	fanoutBatch   = 100
	fanoutBatches = 10
)

// sweepStore is what the janitor writes in Redis.
type sweepStore interface {
	SweepRuns(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error)
}

// fanoutStore finishes fan-outs left pending.
type fanoutStore interface {
	RecoverFanouts(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, finished int, err error)
}

// cascadeStore finishes the cascades of cancelled runs left pending.
// eventWaitStore wakes runs waiting for an event whose pusher died before
// it woke them.
type eventWaitStore interface {
	RecoverEventWaiters(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, woken int, err error)
}

type cascadeStore interface {
	RecoverCascades(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, done int, err error)
}

// janitor removes index entries whose run records have expired, from the
// runs index of every partition, every interval, in batches with a cursor,
// starting at a random offset in time so a fleet of workers does not sweep
// in lockstep.
//
// It also finishes the fan-outs of events whose ingester died (or whose
// later steps Redis refused) between storing the event and recording what
// it did to each subscribed task, once they have been pending for
// engine.FanoutGrace (see internal/redisstore/fanout.go). That is a
// worker's duty rather than the ingesters' or taskq serve's: a worker runs
// wherever a namespace's runs are executed, while an ingester may be a
// short-lived process (the CLI) or a service no other ingester watches,
// and taskq serve may not run at all; runs created while no worker runs
// would wait anyway. Every worker looks: a fan-out is handed to one
// recoverer at a time, and its steps are idempotent, so two recoverers (or
// a recoverer and a late ingester) create no run twice.
//
// Likewise it cancels the children of cancelled runs whose canceller did
// not (it died midway, or the run was cancelled by a script: superseded,
// or by its concurrency group), once they have been pending for
// engine.CascadeGrace: cancelling a child twice changes nothing.
type janitor struct {
	startStop
	store      sweepStore
	fanouts    fanoutStore
	cascades   cascadeStore
	eventWaits eventWaitStore
	partitions int
	every      time.Duration
	opTimeout  time.Duration
	clock      task.Clock
	log        *slog.Logger
}

// Start starts sweeping; it is ready at once, the first look for pending
// fan-outs made now (a worker started after a crash finishes what the
// crashed ingester left), the first sweep due within one interval.
func (j *janitor) Start(context.Context) error {
	firstSweep := time.Now().Add(time.Duration(rand.Int64N(int64(j.every))))
	return j.begin(func(quit <-chan struct{}) {
		nextSweep := firstSweep
		for wait := time.Duration(0); sleep(quit, wait); {
			j.recoverFanouts(quit)
			j.recoverCascades(quit)
			j.recoverEventWaits(quit)
			if !time.Now().Before(nextSweep) {
				for part := range max(j.partitions, 1) {
					j.sweep(quit, part)
					j.trimSuppressed(part)
				}
				nextSweep = time.Now().Add(j.every)
			}
			wait = min(fanoutEvery, time.Until(nextSweep))
		}
	})
}

// recoverFanouts finishes the fan-outs pending past their grace period,
// batch by batch while batches come back full, or until quit closes.
func (j *janitor) recoverFanouts(quit <-chan struct{}) {
	if j.fanouts == nil {
		return
	}
	j.recoverBatches(quit, func(ctx context.Context) (int, int, error) {
		return j.fanouts.RecoverFanouts(ctx, j.clock.Now(), engine.FanoutGrace, fanoutBatch)
	}, "taskq: finished the fan-out of events whose ingester left it pending",
		"taskq: finishing pending event fan-outs failed; they are tried again after the grace period")
}

// recoverCascades cancels the children of cancelled runs left pending
// past their grace period, batch by batch while batches come back full,
// or until quit closes.
func (j *janitor) recoverCascades(quit <-chan struct{}) {
	if j.cascades == nil {
		return
	}
	j.recoverBatches(quit, func(ctx context.Context) (int, int, error) {
		return j.cascades.RecoverCascades(ctx, j.clock.Now(), engine.CascadeGrace, fanoutBatch)
	}, "taskq: cancelled the children of cancelled runs",
		"taskq: cancelling the children of cancelled runs failed; they are tried again after the grace period")
}

// recoverEventWaits wakes the runs registered for an event key before an
// event of that key older than the wake grace, whose pusher did not wake
// them (it died between storing the event and waking), batch by batch
// while batches come back full, or until quit closes.
func (j *janitor) recoverEventWaits(quit <-chan struct{}) {
	if j.eventWaits == nil {
		return
	}
	j.recoverBatches(quit, func(ctx context.Context) (int, int, error) {
		return j.eventWaits.RecoverEventWaiters(ctx, j.clock.Now(), engine.EventWakeGrace, fanoutBatch)
	}, "taskq: woke runs waiting for events whose pusher did not wake them",
		"taskq: waking runs waiting for events failed; they are tried again shortly")
}

// recoverBatches calls take, which takes up to fanoutBatch items left
// pending and finishes them, while its batches come back full, at most
// fanoutBatches times, or until quit closes. It logs what was finished
// (doneMsg) and a failure (failMsg).
func (j *janitor) recoverBatches(quit <-chan struct{}, take func(ctx context.Context) (taken, done int, err error),
	doneMsg, failMsg string) {
	for n := 0; n < fanoutBatches; n++ {
		ctx, cancel := context.WithTimeout(context.Background(), j.opTimeout)
		taken, done, err := take(ctx)
		cancel()
		if done > 0 {
			j.log.Info(doneMsg, "finished", done)
		}
		if err != nil {
			j.log.Warn(failMsg, "taken", taken, "finished", done, "err", err)
			return
		}
		if taken < fanoutBatch {
			return
		}
		select {
		case <-quit:
			return
		default:
		}
	}
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
