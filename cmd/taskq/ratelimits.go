package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/pkg/client"
)

func (a *app) rateLimitsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ratelimits",
		Short: "Show the rate limits of the registered tasks and their use",
		Long: `A rate limit caps the units runs take in any window of its period; a run over it
waits, queued, until the limit has room (see docs/rate-limits.md). The limits
listed are those the registered tasks declare, each with the units taken in its
last period, by Redis's clock.`,
		Example: `  taskq ratelimits ls
  taskq ratelimits ls --key acme`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.rateLimitsLsCmd())
	return cmd
}

// rateLimitList is the JSON of ratelimits ls, as GET /api/v1/ratelimits
// answers.
type rateLimitList struct {
	RateLimits []client.RateLimitInfo `json:"rateLimits"`
}

func (a *app) rateLimitsLsCmd() *cobra.Command {
	var key string
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List the rate limits the registered tasks declare, with the units each took in its last period",
		Long: `Lists each limit once, with the tasks that declare it. USED is the units taken in
the last period: of a limit without a key, and of a keyed limit for the value
--key names ("-" without it).`,
		Example: `  taskq ratelimits ls
  taskq ratelimits ls --key acme -o json`,
		Args: argNames(nil),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			ls, err := c.Inspector().ListRateLimits(ctx, key)
			if err != nil {
				return err
			}
			p := a.printer()
			if p.json() {
				if ls == nil {
					ls = []client.RateLimitInfo{}
				}
				return p.JSON(rateLimitList{RateLimits: ls})
			}
			if len(ls) == 0 {
				_, err := fmt.Fprintf(a.stdout, "No rate limits in namespace %q.\n", a.namespace)
				return err
			}
			rows := make([][]string, len(ls))
			for i, l := range ls {
				used := "-"
				if l.Used != nil {
					used = strconv.Itoa(*l.Used)
				}
				limit := strconv.Itoa(l.Limit)
				if l.LimitExpression != "" {
					limit = l.LimitExpression
				}
				rows[i] = []string{l.Name, limit, (time.Duration(l.PeriodMs) * time.Millisecond).String(),
					orDash(l.KeyExpression), orDash(l.Key), used, strings.Join(l.Tasks, ",")}
			}
			return p.Table([]string{"NAME", "LIMIT", "PERIOD", "KEY EXPRESSION", "KEY", "USED", "TASKS"}, rows)
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "the value of keyed limits' key whose use to show, e.g. acme")
	return cmd
}
