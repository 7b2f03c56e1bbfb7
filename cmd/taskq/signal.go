package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// signalLong is what keys signal and runs signal say of a signal.
const signalLong = `The payload is any JSON value (--data: literal JSON, @file or - for stdin).
Signals are stored with the run in order; its handler receives them in that
order (worker.Context's signals), again after a redelivery. A run that has
ended cannot be signalled (exit 1), nor can one that holds the most signals
allowed; a payload over the size limit exits with code 2.`

func (a *app) keysSignalCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "signal KEY",
		Short: "Send a JSON payload to the run that holds an idempotency key",
		Long: `Send a signal to the active run that holds KEY, as POST /api/v1/keys/{key}/signal
does. Exits with code 3 when no run holds the key.

` + signalLong,
		Example: `  taskq keys signal order:1001 --data '{"approved":true}'
  taskq keys signal order:1001 --data @approval.json -o json
  echo '"cancel"' | taskq keys signal order:1001 --data -`,
		Args:              argNames([]string{"KEY"}),
		ValidArgsFunction: a.completeKeys,
		PreRunE:           requireData,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			return a.signal(cmd.Context(), data, args[0], "")
		}),
	}
	cmd.Flags().StringVar(&data, "data", "", "signal payload: any JSON value, @file or - for stdin")
	return cmd
}

func (a *app) runsSignalCmd() *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   "signal ID",
		Short: "Send a JSON payload to a run",
		Long: `Send a signal to the run ID, whether or not it holds an idempotency key.
Exits with code 3 when the run does not exist.

` + signalLong,
		Example: `  taskq runs signal 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --data '{"approved":true}'
  taskq runs signal 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 --data @approval.json -o json`,
		Args:              argNames([]string{"ID"}),
		ValidArgsFunction: a.completeRunIDs,
		PreRunE:           requireData,
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			return a.signal(cmd.Context(), data, "", args[0])
		}),
	}
	cmd.Flags().StringVar(&data, "data", "", "signal payload: any JSON value, @file or - for stdin")
	return cmd
}

func requireData(cmd *cobra.Command, _ []string) error {
	if !cmd.Flags().Changed("data") {
		return usageErrorf("missing --data: give the payload as JSON, @file or - for stdin")
	}
	return nil
}

// signal sends the payload in data to the run holding key, or to run
// runID when key is "", and prints the receipt: with -o json the body of
// the HTTP API's answer.
func (a *app) signal(ctx context.Context, data, key, runID string) error {
	payload, err := readJSON("--data", data, a.stdin)
	if err != nil {
		return err
	}
	c, err := a.client(ctx)
	if err != nil {
		return err
	}
	var rec *client.RunHandle
	if key != "" {
		rec, err = c.Signal(ctx, key, payload)
	} else {
		rec, err = c.Handle(runID).Signal(ctx, payload)
	}
	var limit *client.LimitError
	switch {
	case err == nil:
	case key != "" && errors.Is(err, client.ErrKeyNotHeld):
		return &keyNotHeldError{key: key, ns: a.namespace}
	case errors.As(err, &limit) && limit.What == "signal payload":
		return withCode(exitUsage, err)
	default:
		return err
	}
	p := a.printer()
	if p.json() {
		return p.JSON(wire.SignalledBy(rec))
	}
	sent := wire.SignalledBy(rec)
	if key != "" {
		_, err = fmt.Fprintf(a.stdout, "Signal %s sent to run %s, which holds key %q.\n", clean(sent.SignalID), clean(sent.RunID), clean(key))
	} else {
		_, err = fmt.Fprintf(a.stdout, "Signal %s sent to run %s.\n", clean(sent.SignalID), clean(sent.RunID))
	}
	return err
}
