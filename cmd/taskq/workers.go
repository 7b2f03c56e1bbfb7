package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/redisstore"
)

func (a *app) workersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workers",
		Short: "Show the workers of the namespace and the runs they hold",
		Long: `Every worker writes a record when it starts and at each heartbeat, and takes it
out when it shuts down gracefully. A worker that missed three heartbeats is dead
and stays listed for an hour; the runs it held await redelivery to another
worker, though their records may still say running.`,
		Example: `  taskq workers ls
  taskq workers ls -o json | jq '.lapsed[].runId'`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.workersLsCmd())
	return cmd
}

// readWorkers is the one place the CLI reads the list of workers.
func (a *app) readWorkers(ctx context.Context) (redisstore.WorkersView, error) {
	c, err := a.client(ctx)
	if err != nil {
		return redisstore.WorkersView{}, err
	}
	return c.Store().ListWorkers(ctx, redisstore.ListWorkersParams{})
}

// workersOut is what -o json prints: the fields of GET /api/v1/workers.
type workersOut struct {
	Workers   []workerOut  `json:"workers"`
	Lapsed    []heldRunOut `json:"lapsed"`
	Truncated bool         `json:"truncated"`
}

type workerOut struct {
	Name                string       `json:"name"`
	Status              string       `json:"status"`
	Host                string       `json:"host"`
	PID                 int          `json:"pid"`
	Version             string       `json:"version"`
	Tasks               []string     `json:"tasks"`
	Concurrency         int          `json:"concurrency"`
	StartedAt           time.Time    `json:"startedAt"`
	LastHeartbeatAt     time.Time    `json:"lastHeartbeatAt"`
	HeartbeatIntervalMs int64        `json:"heartbeatIntervalMs"`
	LeaseMs             int64        `json:"leaseMs"`
	Runs                []heldRunOut `json:"runs"`
}

type heldRunOut struct {
	RunID       string `json:"runId"`
	Task        string `json:"task"`
	Worker      string `json:"worker"`
	EntryID     string `json:"entryId"`
	IdleMs      int64  `json:"idleMs"`
	Deliveries  int64  `json:"deliveries"`
	LeaseLapsed bool   `json:"leaseLapsed"`
}

func workerStatus(dead bool) string {
	if dead {
		return "dead"
	}
	return "live"
}

func heldRunsOut(hs []redisstore.HeldRun) []heldRunOut {
	out := make([]heldRunOut, len(hs))
	for i, h := range hs {
		out[i] = heldRunOut{RunID: h.RunID, Task: h.Task, Worker: h.Consumer, EntryID: h.EntryID,
			IdleMs: h.Idle.Milliseconds(), Deliveries: h.Deliveries, LeaseLapsed: h.Lapsed}
	}
	return out
}

func toWorkersOut(v redisstore.WorkersView) workersOut {
	out := workersOut{Workers: make([]workerOut, len(v.Workers)), Lapsed: heldRunsOut(v.Lapsed), Truncated: v.Truncated}
	for i, w := range v.Workers {
		tasks := w.Tasks
		if tasks == nil {
			tasks = []string{}
		}
		out.Workers[i] = workerOut{
			Name: w.Name, Status: workerStatus(w.Dead), Host: w.Host, PID: w.PID, Version: w.Version, Tasks: tasks,
			Concurrency: w.Concurrency, StartedAt: w.Started.UTC(), LastHeartbeatAt: w.LastHeartbeat.UTC(),
			HeartbeatIntervalMs: w.HeartbeatInterval.Milliseconds(), LeaseMs: w.LeaseDuration.Milliseconds(),
			Runs: heldRunsOut(w.Runs),
		}
	}
	return out
}

func (a *app) workersLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List live and recently dead workers, the runs they hold, and runs awaiting redelivery",
		Example: `  taskq workers ls
  taskq workers ls -o json`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			v, err := a.readWorkers(ctx)
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				return p.JSON(toWorkersOut(v))
			}
			if len(v.Workers) == 0 && len(v.Lapsed) == 0 {
				_, err := fmt.Fprintf(a.stdout, "No workers in namespace %q.\n", a.namespace)
				return err
			}
			now := time.Now()
			rows := make([][]string, len(v.Workers))
			var held []redisstore.HeldRun
			for i, w := range v.Workers {
				rows[i] = []string{w.Name, workerStatus(w.Dead), orDash(w.Host), strconv.Itoa(w.PID), orDash(w.Version),
					orDash(strings.Join(w.Tasks, ",")), strconv.Itoa(w.Concurrency), strconv.Itoa(len(w.Runs)),
					formatDuration(now.Sub(w.Started)), formatDuration(now.Sub(w.LastHeartbeat)) + " ago"}
				held = append(held, w.Runs...)
			}
			if len(rows) > 0 {
				if err := p.Table([]string{"NAME", "STATUS", "HOST", "PID", "VERSION", "TASKS", "CONCURRENCY", "RUNS", "UP", "LAST HEARTBEAT"}, rows); err != nil {
					return err
				}
			}
			// The runs held by workers, then lapsed runs of workers no
			// longer listed.
			for _, h := range v.Lapsed {
				if !listed(v.Workers, h.Consumer) {
					held = append(held, h)
				}
			}
			if len(held) > 0 {
				fmt.Fprintln(a.stdout)
				runRows := make([][]string, len(held))
				for i, h := range held {
					lease := "held"
					if h.Lapsed {
						lease = "lapsed, awaiting redelivery"
					}
					runRows[i] = []string{orDash(h.RunID), h.Task, h.Consumer, formatDuration(h.Idle), strconv.FormatInt(h.Deliveries, 10), lease}
				}
				if err := p.Table([]string{"RUN", "TASK", "WORKER", "SINCE RENEWAL", "DELIVERIES", "LEASE"}, runRows); err != nil {
					return err
				}
			}
			if v.Truncated {
				_, err = fmt.Fprintln(a.stdout, "(lists cut short at 1000 workers or 1000 held runs per task)")
			}
			return err
		}),
	}
}

func listed(ws []redisstore.WorkerInfo, name string) bool {
	for _, w := range ws {
		if w.Name == name {
			return true
		}
	}
	return false
}
