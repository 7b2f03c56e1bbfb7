package main

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/pkg/client"
)

const (
	// completeTimeout bounds the connection and the Redis reads of one
	// completion, unless TASKQ_COMPLETE_TIMEOUT says otherwise.
	completeTimeout = 2 * time.Second
	// completeMax bounds the candidates one completion offers.
	completeMax = 100
	// completeRunsScan is how many of the newest runs a run ID
	// completion looks through.
	completeRunsScan = client.ListLimitMax
	// completeKeyPages bounds the SCAN pages a key completion reads.
	completeKeyPages = 10
)

// completeRunIDs completes a command's one run ID argument with the IDs of
// the newest runs that start with what was typed; it stays silent without
// Redis.
func (a *app) completeRunIDs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.completeTimeout())
	defer cancel()
	c, err := a.client(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ids, err := clientlink.Store(c).ListRunIDs(ctx, 0, completeRunsScan)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, id := range ids {
		if strings.HasPrefix(id, toComplete) {
			out = append(out, id)
			if len(out) == completeMax {
				break
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeKeys completes a command's one key argument with the held
// idempotency keys that start with what was typed (a SCAN with the typed
// prefix as a glob, its glob characters escaped); it stays silent without
// Redis.
func (a *app) completeKeys(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), a.completeTimeout())
	defer cancel()
	c, err := a.client(ctx)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	o := client.ListOptions{Match: globEscape(toComplete) + "*", Limit: client.ListLimitMax}
	var out []string
	for range completeKeyPages {
		page, err := c.Inspector().ListKeys(ctx, o)
		if err != nil {
			break
		}
		for _, k := range page.Items {
			out = append(out, k.Key)
		}
		if len(out) >= completeMax || page.NextCursor == "" {
			break
		}
		o.Cursor = page.NextCursor
	}
	if len(out) > completeMax {
		out = out[:completeMax]
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// globEscape escapes the characters Redis MATCH treats as a pattern.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// completeTimeout is how long one completion may take: completeTimeout, or
// TASKQ_COMPLETE_TIMEOUT when that is a positive Go duration (a completion
// has no way to report a bad one).
func (a *app) completeTimeout() time.Duration {
	if d, err := time.ParseDuration(a.getenv(envCompleteTimeout)); err == nil && d > 0 {
		return d
	}
	return completeTimeout
}
