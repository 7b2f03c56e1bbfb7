package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/pkg/client"
)

// scheduleFlags are --at and --in, which schedule a run for later.
type scheduleFlags struct {
	at string
	in time.Duration
}

func (f *scheduleFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&f.at, "at", "", what+" at this time (RFC 3339, e.g. 2030-01-02T15:04:05Z) instead of now")
	cmd.Flags().DurationVar(&f.in, "in", 0, what+" after this long (e.g. 90s, 2h30m) instead of now")
}

// given reports whether --at or --in was set.
func (f *scheduleFlags) given(cmd *cobra.Command) bool {
	return cmd.Flags().Changed("at") || cmd.Flags().Changed("in")
}

// check reads the flags (in PreRunE): a bad time, or both flags, is a
// usage error. The limits are the client's (see scheduleUsage).
func (f *scheduleFlags) check(cmd *cobra.Command) (at *time.Time, err error) {
	if cmd.Flags().Changed("at") && cmd.Flags().Changed("in") {
		return nil, usageErrorf("give --at or --in, not both")
	}
	if !cmd.Flags().Changed("at") {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339Nano, f.at)
	if err != nil {
		return nil, usageErrorf("invalid --at %q: give an RFC 3339 time such as 2030-01-02T15:04:05Z", f.at)
	}
	return &t, nil
}

// options turns the flags into trigger options.
func (f *scheduleFlags) options(cmd *cobra.Command, at *time.Time) []client.RunOption {
	switch {
	case at != nil:
		return []client.RunOption{client.RunAt(*at)}
	case cmd.Flags().Changed("in"):
		return []client.RunOption{client.RunIn(f.in)}
	}
	return nil
}

// scheduleUsage makes a schedule the client refused (too far ahead, a
// negative --in, a debounced task) a usage error, naming the flag.
func scheduleUsage(err error) error {
	se, ok := admission.ScheduleField(err)
	if !ok {
		return err
	}
	flag := "--at"
	if se.Field == "runIn" {
		flag = "--in"
	}
	return withCode(exitUsage, fmt.Errorf("invalid %s: %w", flag, err))
}

// dueText says what a queued run that waits is waiting for, and until
// when; "" for a run that does not wait.
func dueText(r *client.RunInfo) string {
	switch {
	case r.ScheduledAt == nil || r.Status != client.StatusQueued:
		return ""
	case r.Scheduled:
		return "waiting until " + formatTime(*r.ScheduledAt) + " (scheduled)"
	case r.Attempt > 0:
		return "waiting until " + formatTime(*r.ScheduledAt) + " (retry)"
	}
	return "waiting until " + formatTime(*r.ScheduledAt) + " (debounce window)"
}

func (a *app) runsRescheduleCmd() *cobra.Command {
	var sf scheduleFlags
	var at *time.Time
	cmd := &cobra.Command{
		Use:   "reschedule ID",
		Short: "Move a scheduled run to a new due time",
		Long: `Move a run scheduled with --at or --in (or RunAt/RunIn, or the HTTP API's
runAt/runIn) that is not yet due to a new due time, earlier or later. Its
idempotency key's expiry moves with it. A time already passed queues the run
at once. A run that no longer waits (its time came, it is running or ended),
or that waits for a retry or a debounce window, is refused (exit 1).`,
		Example: `  taskq runs reschedule 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --in 2h
  taskq runs reschedule 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --at 2030-01-02T15:04:05Z -o json`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if !sf.given(cmd) {
				return usageErrorf("give the new due time with --at or --in")
			}
			var err error
			at, err = sf.check(cmd)
			return err
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			var info *client.RunInfo
			if at != nil {
				info, err = c.Inspector().Reschedule(ctx, args[0], *at)
			} else {
				info, err = rescheduleIn(ctx, c, args[0], sf.in)
			}
			if err != nil {
				return scheduleUsage(err)
			}
			p := a.printer()
			if p.json() {
				return p.JSON(runJSON(info))
			}
			_, err = fmt.Fprintf(a.stdout, "Rescheduled run %s: %s.\n", clean(info.ID), clean(dueText(info)))
			return err
		}),
	}
	sf.add(cmd, "queue the run")
	return cmd
}

// rescheduleIn is Reschedule to d from now on c's clock, a negative d or
// one over the client's MaxScheduleAhead refused as --in.
func rescheduleIn(ctx context.Context, c *client.Client, runID string, d time.Duration) (*client.RunInfo, error) {
	l := clientlink.Of(c)
	now := l.Clock.Now()
	if _, _, err := l.Admission.ScheduleDelay(&admission.Schedule{In: &d}, now); err != nil {
		return nil, err
	}
	return c.Inspector().Reschedule(ctx, runID, now.Add(d))
}
