package client

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Workers is what ListWorkers found.
type Workers struct {
	// Workers are live workers, then dead ones, each by name.
	Workers []WorkerInfo
	// Lapsed are the held runs, of any worker, whose lease lapsed: they
	// await redelivery, whatever their records say.
	Lapsed []HeldRun
	// Truncated is set when a bound cut a list short.
	Truncated bool
}

// WorkerInfo is one worker, from the record it writes at each heartbeat.
type WorkerInfo struct {
	Name string
	// Status is WorkerLive, or WorkerDead once three heartbeat intervals
	// passed without a heartbeat.
	Status            string
	Host              string
	PID               int
	Version           string
	Tasks             []string
	Concurrency       int
	StartedAt         time.Time
	LastHeartbeatAt   time.Time
	HeartbeatInterval time.Duration
	// Lease is the worker's lease duration (worker.Options.LeaseDuration).
	Lease time.Duration
	// Runs are the runs whose deliveries the worker holds, oldest first.
	Runs []HeldRun
}

// The statuses of a worker.
const (
	WorkerLive = "live"
	WorkerDead = "dead"
)

// HeldRun is a run whose delivery a worker holds under a lease.
type HeldRun struct {
	RunID  string
	Task   string
	Worker string
	// EntryID is the delivery's stream entry.
	EntryID string
	// Idle is how long the lease has gone without renewal.
	Idle time.Duration
	// Deliveries counts how often the entry was delivered.
	Deliveries int64
	// LeaseLapsed: the lease ran out or its worker is dead, so the run
	// awaits redelivery to another worker.
	LeaseLapsed bool
}

// ListWorkers lists the live and recently dead workers of the namespace,
// the runs each holds, and the runs whose lease lapsed and that await
// redelivery (so a dead worker's run is visibly not being worked on).
func (in *Inspector) ListWorkers(ctx context.Context) (*Workers, error) {
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	v, err := in.c.store.ListWorkers(ctx, engine.ListWorkersParams{Now: in.c.opts.Clock.Now()})
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	out := &Workers{Workers: make([]WorkerInfo, len(v.Workers)), Lapsed: heldRuns(v.Lapsed), Truncated: v.Truncated}
	for i, w := range v.Workers {
		status := WorkerLive
		if w.Dead {
			status = WorkerDead
		}
		tasks := w.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		out.Workers[i] = WorkerInfo{
			Name: w.Name, Status: status, Host: w.Host, PID: w.PID, Version: w.Version, Tasks: tasks,
			Concurrency: w.Concurrency, StartedAt: w.Started.UTC(), LastHeartbeatAt: w.LastHeartbeat.UTC(),
			HeartbeatInterval: w.HeartbeatInterval, Lease: w.LeaseDuration, Runs: heldRuns(w.Runs),
		}
	}
	return out, nil
}

func heldRuns(hs []engine.HeldRun) []HeldRun {
	out := make([]HeldRun, len(hs))
	for i, h := range hs {
		out[i] = HeldRun{RunID: h.RunID, Task: h.Task, Worker: h.Consumer, EntryID: h.EntryID,
			Idle: h.Idle, Deliveries: h.Deliveries, LeaseLapsed: h.Lapsed}
	}
	return out
}
