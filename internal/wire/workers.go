package wire

import (
	"time"

	"github.com/taskq/taskq/pkg/client"
)

// Workers is the list of workers as GET /api/v1/workers and the command
// line's `workers ls -o json` write it (client.Workers, its durations in
// milliseconds).
type Workers struct {
	Workers   []Worker  `json:"workers"`
	Lapsed    []HeldRun `json:"lapsed"`
	Truncated bool      `json:"truncated"`
}

// Worker is one worker of Workers (client.WorkerInfo).
type Worker struct {
	Name                string    `json:"name"`
	Status              string    `json:"status"`
	Host                string    `json:"host"`
	PID                 int       `json:"pid"`
	Version             string    `json:"version"`
	Tasks               []string  `json:"tasks"`
	Concurrency         int       `json:"concurrency"`
	StartedAt           time.Time `json:"startedAt"`
	LastHeartbeatAt     time.Time `json:"lastHeartbeatAt"`
	HeartbeatIntervalMs int64     `json:"heartbeatIntervalMs"`
	LeaseMs             int64     `json:"leaseMs"`
	Runs                []HeldRun `json:"runs"`
}

// HeldRun is a run whose delivery a worker holds (client.HeldRun).
type HeldRun struct {
	RunID       string `json:"runId"`
	Task        string `json:"task"`
	Worker      string `json:"worker"`
	EntryID     string `json:"entryId"`
	IdleMs      int64  `json:"idleMs"`
	Deliveries  int64  `json:"deliveries"`
	LeaseLapsed bool   `json:"leaseLapsed"`
}

// WorkersOf is v as JSON.
func WorkersOf(v *client.Workers) Workers {
	out := Workers{Workers: make([]Worker, len(v.Workers)), Lapsed: heldRuns(v.Lapsed), Truncated: v.Truncated}
	for i, w := range v.Workers {
		tasks := w.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		out.Workers[i] = Worker{Name: w.Name, Status: w.Status, Host: w.Host, PID: w.PID, Version: w.Version,
			Tasks: tasks, Concurrency: w.Concurrency, StartedAt: w.StartedAt, LastHeartbeatAt: w.LastHeartbeatAt,
			HeartbeatIntervalMs: w.HeartbeatInterval.Milliseconds(), LeaseMs: w.Lease.Milliseconds(), Runs: heldRuns(w.Runs)}
	}
	return out
}

func heldRuns(hs []client.HeldRun) []HeldRun {
	out := make([]HeldRun, len(hs))
	for i, h := range hs {
		out[i] = HeldRun{RunID: h.RunID, Task: h.Task, Worker: h.Worker, EntryID: h.EntryID,
			IdleMs: h.Idle.Milliseconds(), Deliveries: h.Deliveries, LeaseLapsed: h.LeaseLapsed}
	}
	return out
}
