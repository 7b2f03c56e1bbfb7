package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
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
func (a *app) readWorkers(ctx context.Context) (*client.Workers, error) {
	c, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	return c.Inspector().ListWorkers(ctx)
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
				return p.JSON(wire.WorkersOf(v))
			}
			if len(v.Workers) == 0 && len(v.Lapsed) == 0 {
				_, err := fmt.Fprintf(a.stdout, "No workers in namespace %q.\n", a.namespace)
				return err
			}
			now := time.Now()
			rows := make([][]string, len(v.Workers))
			var held []client.HeldRun
			for i, w := range v.Workers {
				rows[i] = []string{w.Name, w.Status, orDash(w.Host), strconv.Itoa(w.PID), orDash(w.Version),
					orDash(strings.Join(w.Tasks, ",")), strconv.Itoa(w.Concurrency), strconv.Itoa(len(w.Runs)),
					formatDuration(now.Sub(w.StartedAt)), formatDuration(now.Sub(w.LastHeartbeatAt)) + " ago"}
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
				if !listed(v.Workers, h.Worker) {
					held = append(held, h)
				}
			}
			if len(held) > 0 {
				fmt.Fprintln(a.stdout)
				runRows := make([][]string, len(held))
				for i, h := range held {
					lease := "held"
					if h.LeaseLapsed {
						lease = "lapsed, awaiting redelivery"
					}
					runRows[i] = []string{orDash(h.RunID), h.Task, h.Worker, formatDuration(h.Idle), strconv.FormatInt(h.Deliveries, 10), lease}
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

func listed(ws []client.WorkerInfo, name string) bool {
	for _, w := range ws {
		if w.Name == name {
			return true
		}
	}
	return false
}
