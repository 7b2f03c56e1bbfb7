package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Workers is what ListWorkers found: the CLI's `workers ls -o json` and
// GET /api/v1/workers print it as it is.
type Workers struct {
	// Workers are live workers, then dead ones, each by name.
	Workers []WorkerInfo `json:"workers"`
	// Lapsed are the held runs, of any worker, whose lease lapsed: they
	// await redelivery, whatever their records say.
	Lapsed []HeldRun `json:"lapsed"`
	// Truncated is set when a bound cut a list short.
	Truncated bool `json:"truncated"`
}

// WorkerInfo is one worker, from the record it writes at each heartbeat.
type WorkerInfo struct {
	Name string `json:"name"`
	// Status is "live", or "dead" once three heartbeat intervals passed
	// without a heartbeat.
	Status            string    `json:"status"`
	Host              string    `json:"host"`
	PID               int       `json:"pid"`
	Version           string    `json:"version"`
	Tasks             []string  `json:"tasks"`
	Concurrency       int       `json:"concurrency"`
	StartedAt         time.Time `json:"startedAt"`
	LastHeartbeatAt   time.Time `json:"lastHeartbeatAt"`
	HeartbeatInterval Millis    `json:"heartbeatIntervalMs"`
	Lease             Millis    `json:"leaseMs"`
	// Runs are the runs whose deliveries the worker holds, oldest first.
	Runs []HeldRun `json:"runs"`
}

// The statuses of a worker.
const (
	WorkerLive = "live"
	WorkerDead = "dead"
)

// HeldRun is a run whose delivery a worker holds under a lease.
type HeldRun struct {
	RunID  string `json:"runId"`
	Task   string `json:"task"`
	Worker string `json:"worker"`
	// EntryID is the delivery's stream entry.
	EntryID string `json:"entryId"`
	// Idle is how long the lease has gone without renewal.
	Idle Millis `json:"idleMs"`
	// Deliveries counts how often the entry was delivered.
	Deliveries int64 `json:"deliveries"`
	// LeaseLapsed: the lease ran out or its worker is dead, so the run
	// awaits redelivery to another worker.
	LeaseLapsed bool `json:"leaseLapsed"`
}

// Millis is a duration written in JSON as whole milliseconds.
type Millis time.Duration

// MarshalJSON writes the duration in milliseconds.
func (m Millis) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, time.Duration(m).Milliseconds(), 10), nil
}

// UnmarshalJSON reads a duration in milliseconds.
func (m *Millis) UnmarshalJSON(b []byte) error {
	ms, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return fmt.Errorf("client: a duration in milliseconds: %w", err)
	}
	*m = Millis(time.Duration(ms) * time.Millisecond)
	return nil
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
			HeartbeatInterval: Millis(w.HeartbeatInterval), Lease: Millis(w.LeaseDuration), Runs: heldRuns(w.Runs),
		}
	}
	return out, nil
}

func heldRuns(hs []engine.HeldRun) []HeldRun {
	out := make([]HeldRun, len(hs))
	for i, h := range hs {
		out[i] = HeldRun{RunID: h.RunID, Task: h.Task, Worker: h.Consumer, EntryID: h.EntryID,
			Idle: Millis(h.Idle), Deliveries: h.Deliveries, LeaseLapsed: h.Lapsed}
	}
	return out
}
