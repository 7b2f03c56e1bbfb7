package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

func (a *app) schedulesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedules",
		Short: "Register, list, pause, resume, delete and trigger cron schedules",
		Long: `A cron schedule triggers a task at every tick of a cron expression (five
fields, @hourly and the other descriptors, or @every <duration>), read in a time
zone. Any number of workers run the scheduler, and each tick fires exactly once:
its run's idempotency key is derived from the schedule and the tick
(schedule.name + "@" + string(schedule.time) unless --key says otherwise) and
claimed in the script that creates the run. Ticks missed while no scheduler ran
are skipped (only the latest fires, if recent) or caught up (at most N). See
docs/cron.md.`,
		Example: `  taskq schedules create nightly-report --task report --cron '0 2 * * *' --timezone Europe/Paris
  taskq schedules ls
  taskq schedules pause nightly-report
  taskq schedules trigger-now nightly-report`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.schedulesLsCmd(), a.schedulesGetCmd(), a.schedulesCreateCmd(), a.schedulesPauseCmd(true),
		a.schedulesPauseCmd(false), a.schedulesDeleteCmd(), a.schedulesTriggerNowCmd())
	return cmd
}

// schedules is the one place the CLI reaches the namespace's schedules.
func (a *app) schedules(ctx context.Context) (*client.Schedules, error) {
	c, err := a.client(ctx)
	if err != nil {
		return nil, err
	}
	return c.Schedules(), nil
}

func (a *app) schedulesLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the namespace's schedules, their state and next tick",
		Example: `  taskq schedules ls
  taskq schedules ls -o json | jq '.schedules[] | select(.paused)'`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			infos, err := s.List(ctx)
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				out := wire.ScheduleList{Schedules: make([]wire.Schedule, len(infos))}
				for i, info := range infos {
					out.Schedules[i] = wire.ScheduleOf(info)
				}
				return p.JSON(out)
			}
			if len(infos) == 0 {
				_, err := fmt.Fprintf(a.stdout, "No schedules in namespace %q.\n", a.namespace)
				return err
			}
			rows := make([][]string, len(infos))
			for i, info := range infos {
				st := "active"
				if info.Paused {
					st = "paused"
				}
				sc := info.Schedule
				rows[i] = []string{sc.Name, sc.Task, sc.Cron, zoneOf(sc), st, misfireOf(info), formatTime(info.Cursor), formatTime(info.Next)}
			}
			return p.Table([]string{"NAME", "TASK", "CRON", "ZONE", "STATE", "MISFIRE", "CURSOR", "NEXT"}, rows)
		}),
	}
}

func zoneOf(s task.Schedule) string {
	if s.TimeZone == "" {
		return "UTC"
	}
	return s.TimeZone
}

func misfireOf(info *client.ScheduleInfo) string {
	m := info.Schedule.Misfire
	h := formatDuration(ticks.Horizon(info.Schedule))
	if m.Policy == task.MisfireCatchUp {
		return fmt.Sprintf("catch up %d within %s", m.Max, h)
	}
	return "skip after " + h
}

func (a *app) schedulesGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "get NAME",
		Short:   "Show one schedule",
		Example: `  taskq schedules get nightly-report -o json`,
		Args:    argNames([]string{"NAME"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			info, err := s.Get(ctx, args[0])
			if err != nil {
				return err
			}
			return a.printSchedule(info)
		}),
	}
}

func (a *app) printSchedule(info *client.ScheduleInfo) error {
	p := a.printer()
	if p.json() {
		return p.JSON(wire.ScheduleOf(info))
	}
	sc := info.Schedule
	st := "active"
	if info.Paused {
		st = "paused"
	}
	return p.Fields([][2]string{
		{"Name", sc.Name}, {"Task", sc.Task}, {"Cron", sc.Cron}, {"Time zone", zoneOf(sc)}, {"State", st},
		{"Key expression", sc.KeyExpression}, {"Misfire", misfireOf(info)},
		{"Key held", formatDuration(ticks.KeyTTL(info.Schedule))},
		{"Input", orDash(string(sc.Input))}, {"Metadata", orDash(string(sc.Metadata))},
		{"Cursor", formatTime(info.Cursor)}, {"Next tick", formatTime(info.Next)},
		{"Created", formatTime(info.Created)}, {"Updated", formatTime(info.Updated)},
	})
}

func (a *app) schedulesCreateCmd() *cobra.Command {
	var (
		s       task.Schedule
		input   string
		meta    string
		misfire string
		catchUp int
		horizon time.Duration
		replace bool
		// allowUnregistered accepts a task no worker has registered yet.
		allowUnregistered bool
		policies          = []string{string(task.MisfireSkip), string(task.MisfireCatchUp)}
	)
	cmd := &cobra.Command{
		Use:     "create NAME --task TASK --cron EXPR",
		Aliases: []string{"register"},
		Short:   "Register a schedule (with --replace, or write a new definition over one)",
		Long: `Register a schedule. Its first tick to fire is the first after now. With
--replace an existing schedule of the name gets the new definition and keeps its
cursor and paused state; without, an existing name is an error.

The task must be registered in the namespace (a worker that handles it has
started): an unknown task, most often a typo, is refused with exit code 3.
--allow-unregistered registers the schedule anyway, for a task whose workers
are not deployed yet: its ticks do not fire (schedulers log a warning) until
one registers the task. Either way an unknown task is warned about on stderr.`,
		Example: `  taskq schedules create nightly-report --task report --cron '0 2 * * *' --timezone Europe/Paris
  taskq schedules create heartbeat --task ping --cron '@every 30s' --input '{"target":"db"}'
  taskq schedules create hourly-sync --task sync --cron @hourly --misfire catch_up --catch-up 3
  taskq schedules create billing --task bill --cron '0 0 1 * *' --key 'schedule.name + ":" + string(schedule.time.getMonth())'`,
		Args: argNames([]string{"NAME"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s.Name = args[0]
			s.Input, s.Metadata = []byte(input), []byte(meta)
			s.Misfire = task.Misfire{Policy: task.MisfirePolicy(misfire), Max: catchUp, Horizon: horizon}
			sc, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			if err := s.Validate(); err != nil {
				return withCode(exitUsage, err)
			}
			if err := a.checkScheduleTask(ctx, s, allowUnregistered); err != nil {
				return err
			}
			save := sc.Create
			if replace {
				save = sc.Put
			}
			info, err := save(ctx, s)
			if err != nil {
				return err
			}
			return a.printSchedule(info)
		}),
	}
	f := cmd.Flags()
	f.StringVar(&s.Task, "task", "", "the task each tick triggers (required)")
	f.StringVar(&s.Cron, "cron", "", "the cron expression: 5 fields, a descriptor (@daily) or @every <duration> (required)")
	f.StringVar(&s.TimeZone, "timezone", "", "the IANA time zone the expression is read in (default UTC)")
	f.BoolVar(&s.Seconds, "seconds", false, "the expression has a sixth field, seconds, first")
	f.StringVar(&input, "input", "", "the JSON object every run gets as input (default {})")
	f.StringVar(&meta, "metadata", "", "the JSON object every run gets as additional_metadata (default {})")
	f.StringVar(&s.KeyExpression, "key", "", "the CEL expression of each tick's key, over input, additional_metadata and schedule (default "+task.ScheduleKeyDefault+")")
	f.StringVar(&misfire, "misfire", string(task.MisfireSkip), "what missed ticks do: skip (only the latest fires) or catch_up")
	f.IntVar(&catchUp, "catch-up", 0, "with --misfire catch_up: the most missed ticks to fire")
	f.DurationVar(&horizon, "horizon", 0, "the oldest a tick may be and still fire (default 1m for skip, 24h for catch_up)")
	f.BoolVar(&s.Paused, "paused", false, "register it paused")
	f.BoolVar(&replace, "replace", false, "write over a schedule of the same name")
	f.BoolVar(&allowUnregistered, "allow-unregistered", false, "register the schedule even if no worker has registered --task yet")
	_ = cmd.MarkFlagRequired("task")
	_ = cmd.MarkFlagRequired("cron")
	_ = cmd.RegisterFlagCompletionFunc("misfire", cobra.FixedCompletions(policies, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// checkScheduleTask refuses a schedule whose task is not registered in the
// namespace, unless allow is set; either way it warns on stderr.
func (a *app) checkScheduleTask(ctx context.Context, s task.Schedule, allow bool) error {
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	_, err = c.Inspector().GetTask(ctx, s.Task)
	if !errors.Is(err, client.ErrTaskNotFound) {
		return err
	}
	fmt.Fprintf(a.stderr, "warning: task %q is not registered in namespace %q: no worker that handles it has started\n", clean(s.Task), clean(a.namespace))
	if allow {
		return nil
	}
	return withCode(exitNotFound, fmt.Errorf("schedule %q: task %q is not registered in namespace %q; check its name, or pass --allow-unregistered to create the schedule before its workers start", s.Name, s.Task, a.namespace))
}

func (a *app) schedulesPauseCmd(pause bool) *cobra.Command {
	use, short, done := "resume NAME", "Let a paused schedule fire again, from its next tick (the ticks of the pause do not fire)", "Resumed"
	if pause {
		use, short, done = "pause NAME", "Stop a schedule's ticks from firing until it is resumed", "Paused"
	}
	return &cobra.Command{
		Use:     use,
		Short:   short,
		Example: "  taskq schedules " + use[:len(use)-len(" NAME")] + " nightly-report",
		Args:    argNames([]string{"NAME"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			if err := s.SetPaused(ctx, args[0], pause); err != nil {
				return err
			}
			info, err := s.Get(ctx, args[0])
			if err != nil {
				return err
			}
			if a.printer().json() {
				return a.printSchedule(info)
			}
			_, err = fmt.Fprintf(a.stdout, "%s schedule %s; next tick %s.\n", done, strconv.Quote(args[0]), formatTime(info.Next))
			return err
		}),
	}
}

func (a *app) schedulesDeleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME",
		Short:   "Delete a schedule and its cursor (the runs its ticks created stay)",
		Example: `  taskq schedules delete nightly-report`,
		Args:    argNames([]string{"NAME"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			if err := s.Delete(ctx, args[0]); err != nil {
				return err
			}
			if p := a.printer(); p.json() {
				return p.JSON(struct {
					Name    string `json:"name"`
					Deleted bool   `json:"deleted"`
				}{args[0], true})
			}
			_, err = fmt.Fprintf(a.stdout, "Deleted schedule %s.\n", strconv.Quote(args[0]))
			return err
		}),
	}
}

func (a *app) schedulesTriggerNowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "trigger-now NAME",
		Short: "Fire one run of a schedule now, with the key its expression gives for the time now",
		Long: `Fire one run of the schedule's task now, paused or not, outside its ticks:
schedule.time is now (to the millisecond), so the run has a key of its own,
and the schedule's cursor does not move.`,
		Example: `  taskq schedules trigger-now nightly-report
  taskq schedules trigger-now nightly-report -o json | jq -r .runId`,
		Args: argNames([]string{"NAME"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, err := a.schedules(ctx)
			if err != nil {
				return err
			}
			info, err := s.Get(ctx, args[0])
			if err != nil {
				return err
			}
			h, err := s.TriggerNow(ctx, args[0])
			var nd *client.DurabilityError
			switch {
			case errors.As(err, &nd):
				// The run was written, short of its durability: the
				// result says how far it reached.
				h = nd.Run
			case err != nil:
				return err
			}
			res := wire.Triggered(info.Schedule.Task, h)
			if p := a.printer(); p.json() {
				return p.JSON(res)
			}
			_, err = fmt.Fprintf(a.stdout, "Triggered run %s of task %s, key %s.\n", res.RunID, strconv.Quote(res.Task), strconv.Quote(res.IdempotencyKey))
			return err
		}),
	}
}
