package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

func (a *app) runsRetryCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Retry a failed or cancelled run as a new run",
		Long: `Trigger a failed or cancelled run again: a new run of its task with the same
input and metadata, exactly as a trigger, so the task's registered expression
derives the key and Redis claims it. A key still held (by retention, or by
another run) is a duplicate: the command names the owner and exits 4. The new
run records the run it retries (retry of), and the run its retry (retried by).
A run that has not ended exits 6; one that succeeded or was already retried
exits 1; an unknown run exits 3.`,
		Example: `  taskq runs retry 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10
  taskq runs retry 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 -o json | jq -r .runId`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			c, err := a.client(ctx)
			if err != nil {
				return err
			}
			orig, err := c.Inspector().GetRun(ctx, id)
			if err != nil {
				return err
			}
			h, err := c.Inspector().RetryRun(ctx, id)
			var (
				nr   *client.StateError
				coll *client.IdempotencyCollisionError
			)
			switch {
			case (errors.As(err, &nr) && errors.Is(nr.Kind, client.ErrNotRetryable)) && !nr.Status.Terminal():
				return withCode(exitPending, err)
			case errors.As(err, &coll):
				ce := &collisionError{coll: coll, status: ownerStatus(ctx, coll)}
				if p := a.printer(); p.json() {
					if err := p.JSON(wire.Collision(coll, ce.status)); err != nil {
						return err
					}
				}
				return ce
			case err != nil:
				return err
			}
			v := wire.Triggered(orig.Task, h)
			if h.TriggerInfo().Outcome == client.OutcomeCreated || h.TriggerInfo().Outcome == "" {
				v.RetryOf = id
			}
			p := a.printer()
			if p.json() {
				return p.JSON(v)
			}
			if v.RetryOf == "" {
				_, err = fmt.Fprintln(a.stdout, clean(describeTrigger(v)))
				return err
			}
			_, err = fmt.Fprintln(a.stdout, clean(fmt.Sprintf("Retried run %s as run %s%s.", id, v.RunID, keyNote(v.IdempotencyKey))))
			return err
		}),
	}
}

func keyNote(key string) string {
	if key == "" {
		return ""
	}
	return fmt.Sprintf(" (key %q)", key)
}
