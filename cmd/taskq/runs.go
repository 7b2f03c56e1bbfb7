package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/durability"
	"github.com/taskq/taskq/internal/fieldfilter"
	"github.com/taskq/taskq/internal/runview"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// runStatuses are the values --status accepts.
var runStatuses = []string{
	string(client.StatusQueued), string(client.StatusRunning), string(client.StatusWaiting), string(client.StatusSucceeded),
	string(client.StatusFailed), string(client.StatusCancelled),
}

// runJSON returns a copy of info with its times in UTC, for output that
// does not depend on the operator's time zone.
func runJSON(info *client.RunInfo) *client.RunInfo {
	c := *info
	c.CreatedAt = c.CreatedAt.UTC()
	c.StartedAt, c.FinishedAt, c.ScheduledAt = utcPtr(c.StartedAt), utcPtr(c.FinishedAt), utcPtr(c.ScheduledAt)
	return &c
}

// attempts shows "counted/max" so a retrying run is visible at a glance,
// and the attempts redelivered without counting (given back at a worker's
// shutdown, a lapsed lease) after it: "1/1 +1 redelivered".
func attempts(r *client.RunInfo) string {
	counted, redelivered := runview.CountedAttempts(r)
	s := fmt.Sprintf("%d/%d", counted, r.Retries+1)
	if redelivered > 0 {
		s += fmt.Sprintf(" +%d redelivered", redelivered)
	}
	return s
}

func (a *app) runsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "Inspect, trigger and cancel runs",
		Example: `  taskq runs ls --status running
  taskq runs get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10
  taskq runs trigger process-order --input '{"orderId":"1001","amount":4200}'`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.runsGetCmd(), a.runsLsCmd(), a.runsResultCmd(), a.runsCancelCmd(), a.runsTriggerCmd(), a.runsRetryCmd(),
		a.runsRescheduleCmd(), a.runsSignalCmd())
	return cmd
}

func (a *app) runsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show a run: status, idempotency key, input, result, its attempts with their errors, its parent and children",
		Example: `  taskq runs get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10
  taskq runs get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 -o json | jq .status`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			info, err := c.Inspector().GetRun(ctx, args[0])
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				return p.JSON(runJSON(info))
			}
			if err := p.Fields([][2]string{
				{"ID", info.ID}, {"Task", info.Task}, {"Status", string(info.Status)}, {"Due", dueText(info)},
				{"Attempt", attempts(info)}, {"Priority", strconv.Itoa(info.Priority)}, {"Key", info.IdempotencyKey}, {"Strategy", info.Strategy},
				{"Created", formatTime(info.CreatedAt)}, {"Started", formatTimePtr(info.StartedAt)},
				{"Finished", formatTimePtr(info.FinishedAt)},
				{"Input", compactJSON(info.Input)}, {"Metadata", metaCell(info.Metadata)},
				{"Result", compactJSON(info.Result)}, {"Error", info.Error},
				{"Retry of", info.RetryOf}, {"Retried by", info.RetriedBy},
				{"Parent", info.Parent}, {"Children", countCell(len(info.Children))},
				{"Waiting", info.Waiting}, {"Concurrency groups", strings.Join(info.ConcurrencyGroups, ", ")},
				{"Signals", countCell(info.SignalCount)}, {"Steps", countCell(info.StepCount)},
			}); err != nil {
				return err
			}
			if err := p.attempts(info.Attempts); err != nil {
				return err
			}
			if err := p.workflow(info.Workflow); err != nil {
				return err
			}
			return p.children(info.Children)
		}),
	}
}

// workflow prints a workflow run's nodes as a table, in topological
// order: nothing for another run.
func (p *printer) workflow(ns []client.WorkflowNode) error {
	if len(ns) == 0 {
		return nil
	}
	fmt.Fprintln(p.w, "\nWorkflow:")
	rows := make([][]string, len(ns))
	for i, n := range ns {
		status := string(n.Status)
		if status == "" {
			status = "pending"
		}
		after := strings.Join(n.Parents, ",")
		if n.OnFailure {
			after = "(on failure)"
		}
		rows[i] = []string{strconv.Itoa(n.Layer), n.Name, after, status, n.RunID, n.Reason}
	}
	return p.Table([]string{"LAYER", "NODE", "AFTER", "STATUS", "RUN", "REASON"}, rows)
}

// childrenShown bounds the children runs get lists; -o json has them all.
const childrenShown = 100

// children prints a run's children as a table under its attempts;
// nothing for a run that spawned none.
func (p *printer) children(cs []client.ChildInfo) error {
	if len(cs) == 0 {
		return nil
	}
	fmt.Fprintln(p.w, "\nChildren:")
	rows := make([][]string, 0, min(len(cs), childrenShown))
	for _, c := range cs[:min(len(cs), childrenShown)] {
		status := string(c.Status)
		if status == "" {
			status = "not created"
		}
		detached := ""
		if c.Detached {
			detached = "detached"
		}
		rows = append(rows, []string{c.Name, c.RunID, c.Task, status, detached})
	}
	if err := p.Table([]string{"NAME", "RUN", "TASK", "STATUS", ""}, rows); err != nil {
		return err
	}
	if more := len(cs) - childrenShown; more > 0 {
		fmt.Fprintf(p.w, "... and %d more (-o json lists them all)\n", more)
	}
	return nil
}

// countCell shows a count, or nothing for none.
func countCell(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

// attempts prints a run's attempts as a table under the run's fields,
// each with its error; nothing for a run that has begun none.
func (p *printer) attempts(as []client.AttemptInfo) error {
	if len(as) == 0 {
		return nil
	}
	fmt.Fprintln(p.w, "\nAttempts:")
	rows := make([][]string, 0, len(as))
	for _, at := range as {
		rows = append(rows, []string{fmt.Sprint(at.Attempt), string(at.Outcome), at.Worker,
			formatTimePtr(at.StartedAt), formatTimePtr(at.EndedAt), at.Error})
	}
	return p.Table([]string{"ATTEMPT", "OUTCOME", "WORKER", "STARTED", "ENDED", "ERROR"}, rows)
}

// metaCell hides empty metadata.
func metaCell(raw []byte) string {
	s := compactJSON(raw)
	if s == "{}" {
		return ""
	}
	return s
}

// taskExists fails with exit code 3 unless a worker registered the task
// or it has runs (of any status).
func (a *app) taskExists(ctx context.Context, c *client.Client, name string) error {
	_, err := c.Inspector().GetTask(ctx, name)
	if !errors.Is(err, client.ErrTaskNotFound) {
		return err
	}
	runs, _, err := a.listRuns(ctx, c, client.ListOptions{Task: name}, 1)
	if err != nil || len(runs) > 0 {
		return err
	}
	return withCode(exitNotFound, fmt.Errorf("no task %q: no worker registered it and it has no runs", name))
}

func (a *app) runsLsCmd() *cobra.Command {
	var taskName, status, key, cursor, since, until string
	var where []string
	var limit int
	var scheduled bool
	var o client.ListOptions
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List runs, newest first",
		Long: `List runs newest first (default 20). --task, --status, --key and --where
(input.<field>=<value> or metadata.<field>=<value>, repeatable) keep the runs
that match them all; --since and --until (RFC 3339, or a duration such as 1h
meaning that long ago) bound their creation time. When more runs follow, the
cursor of the next page is printed on stderr ("next page: --cursor ..."):
pass it with --cursor and the same filters to go on.`,
		Example: `  taskq runs ls
  taskq runs ls --task process-order --status failed --limit 100
  taskq runs ls --where input.customer=42 --where metadata.source=web --since 24h
  taskq runs ls --limit 50 --cursor MTc2NDYxNjQ3NTAwMDowMWEy...
  taskq runs ls -o json | jq -r '.[].id'`,
		Args: argNames(nil),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if status != "" && !slices.Contains(runStatuses, status) {
				return usageErrorf("invalid --status %q: use one of %s", status, strings.Join(runStatuses, ", "))
			}
			if limit < 1 {
				return usageErrorf("invalid --limit %d: must be at least 1", limit)
			}
			o = client.ListOptions{Task: taskName, Status: client.Status(status), Key: key, Cursor: cursor, Scheduled: scheduled}
			var err error
			if o.Since, err = timeFlag("--since", since, time.Now()); err != nil {
				return err
			}
			if o.Until, err = timeFlag("--until", until, time.Now()); err != nil {
				return err
			}
			for _, w := range where {
				if _, err := fieldfilter.Parse(w); err != nil {
					return usageErrorf("invalid --where: where %v", err)
				}
				o.Where = append(o.Where, w)
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			runs, next, err := a.listRuns(ctx, c, o, limit)
			if errors.Is(err, client.ErrInvalidListOption) || errors.Is(err, client.ErrInvalidCursor) {
				return withCode(exitUsage, err)
			}
			if err != nil {
				return err
			}
			// A --task that names no registered task and no run is more
			// likely a typo than an empty queue: say so, exit 3.
			if taskName != "" && len(runs) == 0 && cursor == "" {
				if err := a.taskExists(ctx, c, taskName); err != nil {
					return err
				}
			}
			if next != "" {
				fmt.Fprintf(a.stderr, "next page: --cursor %s\n", next)
			}
			p := a.printer()
			if p.json() {
				out := make([]*client.RunInfo, len(runs))
				for i, r := range runs {
					out[i] = runJSON(r)
					out[i].Input, out[i].Metadata, out[i].Result = nil, nil, nil
				}
				return p.JSON(out)
			}
			if len(runs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "No runs found.")
				return err
			}
			rows := make([][]string, len(runs))
			for i, r := range runs {
				status := string(r.Status)
				if due := dueText(r); due != "" {
					status += ", " + due
				}
				rows[i] = []string{r.ID, r.Task, status, attempts(r), orDash(r.IdempotencyKey), formatTime(r.CreatedAt)}
			}
			return p.Table([]string{"ID", "TASK", "STATUS", "ATTEMPT", "KEY", "CREATED"}, rows)
		}),
	}
	cmd.Flags().StringVar(&taskName, "task", "", "only runs of this task")
	cmd.Flags().StringVar(&status, "status", "", "only runs with this status: "+strings.Join(runStatuses, ", "))
	cmd.Flags().StringVar(&key, "key", "", "only runs of this idempotency key")
	cmd.Flags().BoolVar(&scheduled, "scheduled", false, "only runs waiting for the time they were scheduled at (--at, --in)")
	cmd.Flags().StringArrayVar(&where, "where", nil, "only runs whose input or metadata field has this value: input.<field>=<value> or metadata.<field>=<value> (repeatable)")
	cmd.Flags().StringVar(&since, "since", "", "only runs created at or after this time (RFC 3339, or a duration ago such as 1h)")
	cmd.Flags().StringVar(&until, "until", "", "only runs created before this time (RFC 3339, or a duration ago)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "go on from where a listing stopped (the cursor it printed on stderr)")
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many runs")
	_ = cmd.RegisterFlagCompletionFunc("task", a.completeTasks)
	_ = cmd.RegisterFlagCompletionFunc("status", cobra.FixedCompletions(runStatuses, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// timeFlag reads a time flag: RFC 3339, or a duration meaning that long
// before now ("" is no bound).
func timeFlag(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, usageErrorf("invalid %s %q: give an RFC 3339 time (2026-03-01T12:00:00Z) or a duration ago (1h)", flag, v)
}

// listRuns pages through the runs newest first, by the client's
// Inspector, until limit runs match or the runs end, and returns the
// cursor of the page after them ("" when none follows).
func (a *app) listRuns(ctx context.Context, c *client.Client, o client.ListOptions, limit int) ([]*client.RunInfo, string, error) {
	var out []*client.RunInfo
	prog := a.newProgress("reading runs:", 0)
	defer prog.Done()
	for len(out) < limit {
		o.Limit = min(limit-len(out), client.ListLimitMax)
		page, err := c.Inspector().ListRuns(ctx, o)
		if err != nil {
			return nil, "", fmt.Errorf("listing runs: %w", err)
		}
		out = append(out, page.Items...)
		prog.Add(len(page.Items))
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			break
		}
	}
	return out, o.Cursor, nil
}

// notFinishedError says a run has not reached a terminal status.
type notFinishedError struct {
	ID     string
	Status client.Status
	Waited time.Duration
}

func (e *notFinishedError) Error() string {
	if e.Waited > 0 {
		return fmt.Sprintf("run %s has not finished after %s (status %s)", e.ID, formatDuration(e.Waited), e.Status)
	}
	return fmt.Sprintf("run %s has not finished (status %s); use --wait to wait for it", e.ID, e.Status)
}

func (a *app) runsResultCmd() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "result ID",
		Short: "Print a run's result, waiting for it with --wait",
		Long: `Print the JSON result of a succeeded run. A failed or cancelled run prints its
error and exits with code 1; a run that has not finished (within --wait) exits
with code 6. Waiting is woken by the run's completion, not by polling.`,
		Example: `  taskq runs result 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10
  taskq runs result 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --wait 30s
  taskq runs result 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --wait 1m -o json`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if wait < 0 {
				return usageErrorf("invalid --wait %s: must not be negative", wait)
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			info, err := c.Inspector().GetRun(ctx, id)
			if err != nil {
				return err
			}
			if !info.Status.Terminal() && wait > 0 {
				wctx, cancel := context.WithTimeout(ctx, wait)
				info, err = c.Handle(id).Wait(wctx)
				cancel()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					var st client.Status
					if now, err := c.Handle(id).Get(ctx); err == nil {
						st = now.Status
					}
					return withCode(exitPending, &notFinishedError{ID: id, Status: st, Waited: wait})
				}
				if err != nil {
					return err
				}
			}
			if !info.Status.Terminal() {
				return withCode(exitPending, &notFinishedError{ID: id, Status: info.Status})
			}
			p := a.printer()
			if p.json() {
				// The same body as GET /api/v1/runs/{id}/result.
				if err := p.JSON(wire.OutcomeOf(info)); err != nil {
					return err
				}
			}
			if err := info.Err(); err != nil {
				return err
			}
			if p.json() {
				return nil
			}
			_, err = fmt.Fprintln(a.stdout, cleanLines(indentJSON(info.Result)))
			return err
		}),
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the run to finish (e.g. 30s)")
	return cmd
}

func (a *app) runsCancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a queued or running run",
		Long: `Cancel a run that has not ended: a queued run never starts, a running run's
handler sees its context cancelled, and a status-strategy key is released.
Cancelling a run that already ended changes nothing and says so.`,
		Example:           `  taskq runs cancel 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			before, err := c.Inspector().GetRun(ctx, id)
			if err != nil {
				return err
			}
			st := before.Status
			if !st.Terminal() {
				if st, err = c.Handle(id).Cancel(ctx); err != nil {
					return err
				}
			}
			cancelled := !before.Status.Terminal() && st == client.StatusCancelled
			p := a.printer()
			if p.json() {
				return p.JSON(wire.Cancellation{RunID: id, Status: st, Cancelled: cancelled})
			}
			if cancelled {
				_, err = fmt.Fprintf(a.stdout, "Cancelled run %s (was %s).\n", clean(id), clean(string(before.Status)))
			} else {
				_, err = fmt.Fprintf(a.stdout, "Run %s had already ended: %s. Nothing changed.\n", clean(id), clean(string(st)))
			}
			return err
		}),
	}
}

// conflictPolicies are the values --on-conflict accepts.
var conflictPolicies = []string{
	string(task.ConflictReject), string(task.ConflictAttach), string(task.ConflictSupersede), string(task.ConflictSignal),
}

func (a *app) runsTriggerCmd() *cobra.Command {
	var input, metaJSON, onConflict string
	var meta []string
	var replicas, priority int
	var replicasTimeout time.Duration
	var fsync bool
	var sf scheduleFlags
	var at *time.Time
	cmd := &cobra.Command{
		Use:   "trigger TASK",
		Short: "Trigger a run of a registered task",
		Long: `Trigger a run of TASK with a JSON input, exactly as a client would: the task's
registered key expression derives the idempotency key, and Redis accepts the
run or names the run that already holds the key. A duplicate exits with code 4
and prints the existing run's ID. --on-conflict overrides the task's conflict
policy for this trigger (attach, supersede or signal instead of reject);
--priority (1 to 3) its priority in place of the task's (see docs/scheduling.md).
--replicas N returns only once N replicas acknowledged the run (Redis WAIT),
within --replicas-timeout; --fsync also waits for the master's append-only
file on disk (WAITAOF, Redis 7.2+). When that level is not reached in time the
run was still written: the command prints it and exits 7. --at (an RFC 3339
time) or --in (a duration) schedules the run: it is created now, its key
claimed now, and it waits queued until then (see taskq runs reschedule).`,
		Example: `  taskq runs trigger process-order --input '{"orderId":"1001","amount":4200}'
  taskq runs trigger process-order --input @order.json --meta tenant=acme
  echo '{"orderId":"1002"}' | taskq runs trigger process-order --input -
  taskq runs trigger process-order --input '{"orderId":"1001"}' --on-conflict attach -o json
  taskq runs trigger process-order --input '{"orderId":"1001"}' --replicas 1 --replicas-timeout 100ms
  taskq runs trigger send-reminder --input '{"userId":"7"}' --in 24h
  taskq runs trigger send-reminder --input '{"userId":"7"}' --at 2030-01-02T09:00:00Z`,
		Args:              argNames([]string{"TASK"}),
		ValidArgsFunction: a.completeTaskArg,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if onConflict != "" && !slices.Contains(conflictPolicies, onConflict) {
				return usageErrorf("invalid --on-conflict %q: use one of %s", onConflict, strings.Join(conflictPolicies, ", "))
			}
			if cmd.Flags().Changed("priority") && (priority < 1 || priority > 3) {
				return usageErrorf("invalid --priority %d: use 1 (the lowest), 2 or 3", priority)
			}
			if p := durability.Problem(replicas, replicasTimeout); p != "" {
				return usageErrorf("invalid --replicas, --replicas-timeout or --fsync: durability: %s", p)
			}
			var err error
			at, err = sf.check(cmd)
			return err
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			in, err := readObject("--input", input, a.stdin)
			if err != nil {
				return err
			}
			md, err := metadata(meta, metaJSON, a.stdin)
			if err != nil {
				return err
			}
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			def, err := c.Definition(ctx, args[0])
			if err != nil {
				return err
			}
			// The key is derived here first so that an expression that
			// fails is shown with a caret under the problem.
			if _, err := def.Key(in, md); err != nil {
				return a.exprFailed(def.Idempotency.Expression, err)
			}
			opts := []client.RunOption{client.WithMetadata(md), client.WithSource(client.SourceCLI)}
			if onConflict != "" {
				opts = append(opts, client.OnConflict(task.ConflictPolicy(onConflict)))
			}
			if cmd.Flags().Changed("priority") {
				opts = append(opts, client.WithPriority(priority))
			}
			if cmd.Flags().Changed("replicas") || cmd.Flags().Changed("replicas-timeout") || fsync {
				opts = append(opts, client.WithDurability(task.Durability{Replicas: replicas, Timeout: replicasTimeout, LocalFsync: fsync}))
			}
			opts = append(opts, sf.options(cmd, at)...)
			h, err := c.TriggerJSON(ctx, def, in, opts...)
			err = scheduleUsage(err)
			var nd *client.DurabilityError
			if errors.As(err, &nd) {
				if p := a.printer(); p.json() {
					// The run was written: the HTTP API's 504 body names it.
					if err := p.JSON(wire.NotDurable(nd)); err != nil {
						return err
					}
				}
				return withCode(exitNotDurable, err)
			}
			var coll *client.IdempotencyCollisionError
			if errors.As(err, &coll) {
				ce := &collisionError{coll: coll, status: ownerStatus(ctx, coll)}
				if p := a.printer(); p.json() {
					// A duplicate is an expected outcome that carries data a
					// script needs: the same body as the HTTP API's 409.
					if err := p.JSON(wire.Collision(coll, ce.status)); err != nil {
						return err
					}
				}
				return ce
			}
			if errors.Is(err, client.ErrInputTooLarge) {
				// The arguments were wrong, as for events push.
				return withCode(exitUsage, err)
			}
			if err != nil {
				return err
			}
			// The same body as the HTTP API's answer to a trigger.
			v := wire.Triggered(def.Name, h)
			p := a.printer()
			if p.json() {
				return p.JSON(v)
			}
			line := describeTrigger(v)
			if sf.given(cmd) && h.TriggerInfo().Outcome == client.OutcomeCreated {
				// Said from the run as stored: its due time, or none when
				// the time given had passed.
				if info, err := c.Inspector().GetRun(ctx, h.ID()); err == nil {
					if due := dueText(info); due != "" {
						line += " It is " + due + "."
					} else {
						line += " Its time had come: it is queued now."
					}
				}
			}
			_, err = fmt.Fprintln(a.stdout, clean(line))
			return err
		}),
	}
	sf.add(cmd, "queue the run")
	cmd.Flags().StringVar(&input, "input", "{}", "run input: JSON object, @file or - for stdin")
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "additional metadata key=value (repeatable; values are strings)")
	cmd.Flags().StringVar(&metaJSON, "meta-json", "", "additional metadata as a JSON object, @file or -")
	cmd.Flags().StringVar(&onConflict, "on-conflict", "", "policy when the key is held: "+strings.Join(conflictPolicies, ", ")+" (default: the task's)")
	_ = cmd.RegisterFlagCompletionFunc("on-conflict", cobra.FixedCompletions(conflictPolicies, cobra.ShellCompDirectiveNoFileComp))
	cmd.Flags().IntVar(&priority, "priority", 0, "the run's priority, 1 (the lowest) to 3 (default: the task's)")
	cmd.Flags().IntVar(&replicas, "replicas", 0, "return once this many replicas acknowledged the run (default: the task's level)")
	cmd.Flags().DurationVar(&replicasTimeout, "replicas-timeout", 0, "how long to wait for --replicas (default "+task.DurabilityTimeoutDefault.String()+")")
	cmd.Flags().BoolVar(&fsync, "fsync", false, "also wait for the master's append-only file on disk (Redis 7.2+)")
	return cmd
}

// describeTrigger says in a sentence what a trigger did.
func describeTrigger(v wire.TriggerResult) string {
	keyNote := fmt.Sprintf(" (key %q)", v.IdempotencyKey)
	if v.IdempotencyKey == "" {
		keyNote = fmt.Sprintf(" (task %s is not deduplicated)", v.Task)
	}
	switch client.Outcome(v.Outcome) {
	case client.OutcomeAttached:
		return fmt.Sprintf("Attached to run %s, which holds key %q; nothing was created.", v.RunID, v.IdempotencyKey)
	case client.OutcomeSignalled:
		return fmt.Sprintf("Sent the input as signal %s to run %s, which holds key %q; nothing was created.", v.SignalID, v.RunID, v.IdempotencyKey)
	case client.OutcomeDebounced:
		return fmt.Sprintf("Debounced into queued run %s (key %q): it will run once with this input.", v.RunID, v.IdempotencyKey)
	}
	s := "Accepted run " + v.RunID + keyNote
	if v.SupersededRunID != "" {
		s += "; superseded run " + v.SupersededRunID
	}
	if d := v.Durability; d != nil {
		s += fmt.Sprintf("; %d of %d replica(s) acknowledged it", d.Replicas, d.ReplicasWanted)
		if d.LocalFsync && d.LocalFsynced {
			s += ", fsynced locally"
		}
	}
	return s + "."
}

// collisionError reports a duplicate trigger with the owner's status.
type collisionError struct {
	coll   *client.IdempotencyCollisionError
	status client.Status
}

func (e *collisionError) Error() string {
	s := fmt.Sprintf("duplicate: key %q is held by run %s", e.coll.Key, e.coll.ExistingRunID)
	if e.status != "" {
		s += " (" + string(e.status) + ")"
	}
	return s + "; nothing was created"
}

func (e *collisionError) Unwrap() error { return e.coll }

func ownerStatus(ctx context.Context, coll *client.IdempotencyCollisionError) client.Status {
	if coll.Owner == nil {
		return ""
	}
	info, err := coll.Owner.Get(ctx)
	if err != nil {
		return ""
	}
	return info.Status
}

// indentJSON pretty-prints a result for people; "null" when there is none.
func indentJSON(raw []byte) string {
	if len(raw) == 0 {
		return "null"
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
