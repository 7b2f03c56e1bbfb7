package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// workersResponse is the answer of GET /api/v1/workers.
type workersResponse struct {
	Workers []workerJSON  `json:"workers"`
	Lapsed  []heldRunJSON `json:"lapsed"`
	// Truncated is set when a bound cut a list short.
	Truncated bool `json:"truncated"`
}

type workerJSON struct {
	Name                string        `json:"name"`
	Status              string        `json:"status"` // live or dead
	Host                string        `json:"host"`
	PID                 int           `json:"pid"`
	Version             string        `json:"version"`
	Tasks               []string      `json:"tasks"`
	Concurrency         int           `json:"concurrency"`
	StartedAt           time.Time     `json:"startedAt"`
	LastHeartbeatAt     time.Time     `json:"lastHeartbeatAt"`
	HeartbeatIntervalMs int64         `json:"heartbeatIntervalMs"`
	LeaseMs             int64         `json:"leaseMs"`
	Runs                []heldRunJSON `json:"runs"`
}

type heldRunJSON struct {
	RunID      string `json:"runId"`
	Task       string `json:"task"`
	Worker     string `json:"worker"`
	EntryID    string `json:"entryId"`
	IdleMs     int64  `json:"idleMs"`
	Deliveries int64  `json:"deliveries"`
	// LeaseLapsed: the run awaits redelivery, whatever its record says.
	LeaseLapsed bool `json:"leaseLapsed"`
}

// readWorkers is the one place the API reads the list of workers.
func (s *Server) readWorkers(ctx context.Context) (redisstore.WorkersView, error) {
	return s.c.Store().ListWorkers(ctx, redisstore.ListWorkersParams{})
}

// listWorkers answers GET /api/v1/workers: live and recently dead workers,
// the runs each holds, and the runs whose lease lapsed.
func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) {
	v, err := s.readWorkers(r.Context())
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	writeJSON(w, http.StatusOK, workersJSON(v))
}

func workersJSON(v redisstore.WorkersView) workersResponse {
	out := workersResponse{Workers: make([]workerJSON, len(v.Workers)), Lapsed: heldRunsJSON(v.Lapsed), Truncated: v.Truncated}
	for i, w := range v.Workers {
		status := "live"
		if w.Dead {
			status = "dead"
		}
		tasks := w.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		out.Workers[i] = workerJSON{
			Name: w.Name, Status: status, Host: w.Host, PID: w.PID, Version: w.Version, Tasks: tasks,
			Concurrency: w.Concurrency, StartedAt: w.Started.UTC(), LastHeartbeatAt: w.LastHeartbeat.UTC(),
			HeartbeatIntervalMs: w.HeartbeatInterval.Milliseconds(), LeaseMs: w.LeaseDuration.Milliseconds(),
			Runs: heldRunsJSON(w.Runs),
		}
	}
	return out
}

func heldRunsJSON(hs []redisstore.HeldRun) []heldRunJSON {
	out := make([]heldRunJSON, len(hs))
	for i, h := range hs {
		out[i] = heldRunJSON{RunID: h.RunID, Task: h.Task, Worker: h.Consumer, EntryID: h.EntryID,
			IdleMs: h.Idle.Milliseconds(), Deliveries: h.Deliveries, LeaseLapsed: h.Lapsed}
	}
	return out
}
