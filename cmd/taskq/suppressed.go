package main

import (
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/wire"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/pkg/client"
)

func (a *app) suppressedCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "suppressed",
		Short: "Show the triggers that created no run because another run held their key",
		Long: `Why didn't it run? Every trigger that created no run because its idempotency
key was held (rejected with a collision, attached, signalled or debounced to the
owner, or an event's task deduplicated) is recorded with its key, the run that
held the key, its task, where it came from (client, http, cli, event:<id>), a
digest of its input and the time. Records are kept for a day and about 10,000
per namespace, the oldest going first.`,
		Example: `  taskq suppressed ls --key order-1042
  taskq suppressed ls --owner 0193c0de-7f1e-7b3a-9c1d-2f5e8a4b6c7d
  taskq suppressed ls -o json | jq '.triggers[].source'`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.suppressedLsCmd())
	return cmd
}

func (a *app) suppressedLsCmd() *cobra.Command {
	var o client.ListOptions
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List suppressed triggers, newest first, by key or owner run",
		Example: `  taskq suppressed ls --key order-1042
  taskq suppressed ls --owner 0193c0de-7f1e-7b3a-9c1d-2f5e8a4b6c7d --limit 10
  taskq suppressed ls --cursor <nextCursor of the previous page>`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			page, err := c.Inspector().ListSuppressed(ctx, o)
			if errors.Is(err, client.ErrInvalidCursor) {
				return usageErrorf("--cursor %q is not a cursor a page returned", o.Cursor)
			}
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				return p.JSON(wire.Page{Name: "triggers", Items: page.Items, NextCursor: page.NextCursor})
			}
			if len(page.Items) == 0 {
				_, err := fmt.Fprintln(a.stdout, "No suppressed triggers.")
				return err
			}
			rows := make([][]string, len(page.Items))
			for i, t := range page.Items {
				rows[i] = []string{formatTime(t.Time), t.Key, t.Owner, t.Task, t.Source, t.Outcome, t.InputDigest}
			}
			if err := p.Table([]string{"TIME", "KEY", "OWNER RUN", "TASK", "SOURCE", "OUTCOME", "INPUT DIGEST"}, rows); err != nil {
				return err
			}
			if page.NextCursor != "" {
				_, err = fmt.Fprintf(a.stdout, "\nMore: taskq suppressed ls --cursor %s\n", page.NextCursor)
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Key, "key", "", "only the triggers of this idempotency key (exact)")
	f.StringVar(&o.Owner, "owner", "", "only the triggers refused for this owner run")
	f.IntVar(&o.Limit, "limit", 0, fmt.Sprintf("the most triggers to list (default %d, at most %d)", client.ListLimitDefault, client.ListLimitMax))
	f.StringVar(&o.Cursor, "cursor", "", "continue a listing after the page that printed it")
	return cmd
}
