package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/task"
)

func (a *app) tasksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tasks",
		Short: "Show the task definitions workers registered",
		Long: `Workers register their task definitions in Redis when they start: the key
expression, the strategy and its durations, retries and the event keys that
trigger the task. Event ingestion, the HTTP API and these commands use exactly
those definitions.

A paused task is accepted as before, but workers start none of its runs until
it is resumed.`,
		Example: `  taskq tasks ls
  taskq tasks get process-order
  taskq tasks pause process-order
  taskq tasks resume process-order`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.tasksLsCmd(), a.tasksGetCmd(), a.tasksPauseCmd(true), a.tasksPauseCmd(false))
	return cmd
}

func ms(v int64) time.Duration { return time.Duration(v) * time.Millisecond }

// holdOf describes how long a task's key is held.
func holdOf(s task.Spec) string {
	switch s.Strategy {
	case task.StrategyTTL:
		return formatDuration(ms(s.TTLMs))
	case task.StrategyDebounce:
		return "quiet window " + formatDuration(ms(s.TTLMs))
	case task.StrategyStatus:
		h := "while active, max " + formatDuration(ms(s.FallbackTTLMs))
		if s.RetainMs > 0 {
			h += ", then " + formatDuration(ms(s.RetainMs))
		}
		return h
	}
	return ""
}

func (a *app) tasksLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List registered tasks with their key expression, strategy and events",
		Example: `  taskq tasks ls
  taskq tasks ls -o json | jq -r '.[].spec.expression'`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			regs, err := c.Inspector().ListTasks(ctx)
			if err != nil {
				return err
			}
			paused, err := c.Inspector().PausedTasks(ctx)
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				out := make([]wire.Task, len(regs))
				for i := range regs {
					out[i] = wire.TaskOf(regs[i], paused)
				}
				return p.JSON(out)
			}
			if len(regs) == 0 {
				_, err := fmt.Fprintf(a.stdout, "No tasks registered in namespace %q: start a worker.\n", a.namespace)
				return err
			}
			rows := make([][]string, len(regs))
			for i, r := range regs {
				s := r.Spec
				rows[i] = []string{s.Name, stateCell(paused, s.Name), orDash(string(s.Strategy)), orDash(s.Expression), orDash(holdOf(s)),
					orDash(strings.Join(s.OnEvents, ",")), r.Worker}
			}
			return p.Table([]string{"NAME", "STATE", "STRATEGY", "EXPRESSION", "HOLD", "EVENTS", "WORKER"}, rows)
		}),
	}
}

func (a *app) tasksGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get NAME",
		Short: "Show one registered task definition",
		Example: `  taskq tasks get process-order
  taskq tasks get handle-webhook -o json`,
		Args:              argNames([]string{"NAME"}),
		ValidArgsFunction: a.completeTaskArg,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			r, err := c.Inspector().GetTask(ctx, args[0])
			if err != nil {
				return err
			}
			paused, err := c.Inspector().PausedTasks(ctx)
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				return p.JSON(wire.TaskOf(*r, paused))
			}
			s := r.Spec
			state := stateCell(paused, s.Name)
			if at, ok := paused[s.Name]; ok {
				state += " since " + formatTime(at)
			}
			f := [][2]string{
				{"Name", s.Name}, {"State", state}, {"Expression", s.Expression}, {"Strategy", string(s.Strategy)},
			}
			switch s.Strategy {
			case task.StrategyTTL:
				f = append(f, [2]string{"TTL", formatDuration(ms(s.TTLMs))})
			case task.StrategyDebounce:
				f = append(f, [2]string{"Window", formatDuration(ms(s.TTLMs))})
			case task.StrategyStatus:
				f = append(f, [2]string{"Fallback TTL", formatDuration(ms(s.FallbackTTLMs))})
				if s.RetainMs > 0 {
					f = append(f, [2]string{"Retain", formatDuration(ms(s.RetainMs))})
				}
			default:
				f = append(f, [2]string{"Deduplicated", "no"})
			}
			backoff := fmt.Sprintf("%s x%g", formatDuration(ms(s.BackoffInitialMs)), s.BackoffFactor)
			if s.BackoffMaxMs > 0 {
				backoff += ", max " + formatDuration(ms(s.BackoffMaxMs))
			}
			timeout := ""
			if s.TimeoutMs > 0 {
				timeout = formatDuration(ms(s.TimeoutMs))
			}
			f = append(f,
				[2]string{"On conflict", orDefault(s.OnConflict, string(task.ConflictReject))},
				[2]string{"Retries", fmt.Sprint(s.Retries)}, [2]string{"Backoff", backoff},
				[2]string{"Timeout", timeout}, [2]string{"Max deliveries", fmt.Sprint(s.MaxDeliveries)},
				[2]string{"Events", strings.Join(s.OnEvents, ", ")},
				[2]string{"Concurrency", concurrencyCell(s.Concurrency)},
				[2]string{"Hash", r.Hash}, [2]string{"Worker", r.Worker},
				[2]string{"Registered", formatTime(r.RegisteredAt)},
			)
			return p.Fields(f)
		}),
	}
}

// stateCell says whether a task is paused or active.
func stateCell(paused map[string]time.Time, name string) string {
	if _, ok := paused[name]; ok {
		return "paused"
	}
	return "active"
}

func (a *app) tasksPauseCmd(pause bool) *cobra.Command {
	use, short := "resume NAME", "Let workers start a paused task's runs again, those queued while it was paused first"
	if pause {
		use, short = "pause NAME", "Stop workers starting a task's runs until it is resumed; triggers are still accepted"
	}
	verb := use[:len(use)-len(" NAME")]
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Workers read which tasks are paused every PauseRefresh (1s by default), so a
pause takes effect within about that long; runs already running finish. A run
triggered while its task is paused stays queued.`,
		Example:           "  taskq tasks " + verb + " process-order",
		Args:              argNames([]string{"NAME"}),
		ValidArgsFunction: a.completeTaskArg,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			st, err := c.Inspector().SetTaskPaused(ctx, args[0], pause)
			if err != nil {
				return err
			}
			if a.printer().json() {
				return a.printer().JSON(st)
			}
			var msg string
			switch {
			case pause && st.Changed:
				msg = "Paused task %s: workers start none of its runs until it is resumed; triggers are still accepted.\n"
			case pause:
				msg = "Task %s was paused already.\n"
			case st.Changed:
				msg = "Resumed task %s: workers start its runs again.\n"
			default:
				msg = "Task %s was not paused.\n"
			}
			_, err = fmt.Fprintf(a.stdout, msg, strconv.Quote(args[0]))
			return err
		}),
	}
}

// concurrencyCell shows a task's concurrency limits, "; " between them
// ("" for none).
func concurrencyCell(cs []task.Concurrency) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s, at most %d at once, %s", c.Expression, c.MaxRuns, c.Strategy)
	}
	return strings.Join(out, "; ")
}

// completeTasks completes task names from the registry; it stays silent
// when Redis cannot be reached.
// completeTaskArg completes a command's one task-name argument.
func (a *app) completeTaskArg(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeTasks(cmd, args, "")
}

func (a *app) completeTasks(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	c, err := a.client(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	regs, err := c.Inspector().ListTasks(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	names := make([]string, len(regs))
	for i, r := range regs {
		names[i] = r.Spec.Name
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
