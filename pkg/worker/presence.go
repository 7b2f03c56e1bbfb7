package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// presenceStore is what the presence component writes in Redis.
type presenceStore interface {
	BeatWorker(ctx context.Context, rec engine.WorkerRecord, now time.Time, keep time.Duration) error
	DeregisterWorker(ctx context.Context, name string) error
}

// presence keeps the worker listed (taskq workers ls, GET /api/v1/workers):
// it writes the worker's record at Start and every heartbeat interval
// after, and removes it on a graceful stop. A worker that dies stops
// writing it, and is listed as dead once engine.WorkerDeadAfterBeats
// intervals pass, then forgotten after keep.
type presence struct {
	startStop
	store     presenceStore
	record    engine.WorkerRecord
	keep      time.Duration
	opTimeout time.Duration
	clock     task.Clock
	log       *slog.Logger
	// gone is set once a Stop has taken the record out (under mu).
	gone bool
	// failing is set while writing the record fails (only the loop, and
	// Start before it, touch it), so that a failure is logged once.
	failing bool
}

// Start writes the record. Being listed is for people, not for running
// runs: a write Redis refuses (at maxmemory, where a worker must still start
// and drain the queue) is logged, and the next heartbeat tries again.
func (p *presence) Start(ctx context.Context) error {
	if err := p.canStart(); err != nil {
		return err
	}
	p.write(ctx)
	return p.begin(func(quit <-chan struct{}) {
		for sleep(quit, p.record.HeartbeatInterval) {
			ctx, cancel := context.WithTimeout(context.Background(), min(p.opTimeout, p.record.HeartbeatInterval))
			p.write(ctx)
			cancel()
		}
	})
}

// write writes the record, logging when writing starts or stops failing.
func (p *presence) write(ctx context.Context) {
	err := p.store.BeatWorker(ctx, p.record, p.clock.Now(), p.keep)
	switch {
	case err != nil && !p.failing:
		p.log.Warn("taskq: writing the worker's record failed; it may be listed as dead until a heartbeat succeeds", "err", err)
	case err == nil && p.failing:
		p.log.Info("taskq: the worker's record is written again")
	}
	p.failing = err != nil
}

// Stop ends the heartbeats and, when the worker had started, removes its
// record, once: it holds no run any more (the processor stopped before).
// A second Stop made while the first removes it may return sooner.
func (p *presence) Stop() {
	p.startStop.Stop()
	p.mu.Lock()
	deregister := p.started && !p.gone
	p.gone = true
	p.mu.Unlock()
	if !deregister {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opTimeout)
	defer cancel()
	if err := p.store.DeregisterWorker(ctx, p.record.Name); err != nil {
		p.log.Warn("taskq: removing the worker's record failed; it will be listed as dead until it expires", "err", err)
	}
}
