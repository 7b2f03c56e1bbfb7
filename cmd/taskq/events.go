package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// summary counts the outcomes of an event's runs: "1 created, 1 deduplicated".
func summary(runs []client.EventTaskRun) string {
	if len(runs) == 0 {
		return "no task"
	}
	n := map[string]int{}
	for _, r := range runs {
		n[r.Outcome]++
	}
	var parts []string
	for _, o := range []string{events.OutcomeCreated, events.OutcomeDeduplicated, events.OutcomeDebounced, events.OutcomeError} {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
		}
	}
	return strings.Join(parts, ", ")
}

// ingester returns an event ingester on the client; maxBatch 0 keeps the
// package default.
func (a *app) ingester(ctx context.Context, maxBatch int) (*client.Client, *events.Ingester, error) {
	c, err := a.client(ctx)
	if err != nil {
		return nil, nil, err
	}
	ing, err := events.New(c, events.Options{Logger: a.logger(), MaxBatch: maxBatch})
	if err != nil {
		return nil, nil, err
	}
	return c, ing, nil
}

func (a *app) eventsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Push events and inspect ingested ones",
		Long: `An event is stored and triggers every task that listens to its key; each task
derives its idempotency key from the event's payload and metadata, and a
duplicate is recorded as deduplicated to the run holding the key.`,
		Example: `  taskq events push webhook.received --data '{"id":"evt_1","type":"payment.succeeded"}'
  taskq events ls --key webhook.received
  taskq events get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRun,
	}
	cmd.AddCommand(a.eventsPushCmd(), a.eventsGetCmd(), a.eventsLsCmd())
	return cmd
}

// eventTriggerError says an event was stored but some task could not
// derive its key from it.
type eventTriggerError struct{ failed, events int }

func (e *eventTriggerError) Error() string {
	return fmt.Sprintf("stored %d event(s), but %d task trigger(s) failed; see the error column", e.events, e.failed)
}

func (a *app) eventsPushCmd() *cobra.Command {
	var data, metaJSON string
	var meta []string
	var batch bool
	var chunk int
	cmd := &cobra.Command{
		Use:   "push KEY",
		Short: "Push an event and print the runs it created or was deduplicated to",
		Long: `Store an event under KEY and trigger every task listening to KEY, printing per
task whether a run was created or the trigger was deduplicated to the run that
holds its key (a duplicate is not an error for events). A task whose key
expression fails on the payload is listed with its error and the command exits
with code 1.

With --batch, --data holds many payloads, as a JSON array or one JSON value per
line, and they are pushed in chunks of --chunk; a terminal shows progress.
Every payload is checked before the first chunk is sent, so a bad one fails
the command with nothing stored. If Redis fails some events, the ones stored
are printed and the error names the payloads that were not.`,
		Example: `  taskq events push webhook.received --data '{"id":"evt_1","type":"payment.succeeded"}'
  taskq events push webhook.received --data @payload.json --meta source=stripe
  taskq events push webhook.received --batch --data @deliveries.ndjson
  cat payload.json | taskq events push webhook.received --data -`,
		Args: argNames([]string{"KEY"}),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("data") {
				return usageErrorf("missing --data: give the payload as JSON, @file or - for stdin")
			}
			if chunk < 1 {
				return usageErrorf("invalid --chunk %d: must be at least 1", chunk)
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			key := args[0]
			var payloads []json.RawMessage
			if batch {
				raw, err := readSource("--data", data, a.stdin)
				if err != nil {
					return err
				}
				if payloads, err = splitBatch(raw); err != nil {
					return err
				}
			} else {
				p, err := readObject("--data", data, a.stdin)
				if err != nil {
					return err
				}
				payloads = []json.RawMessage{p}
			}
			md, err := metadata(meta, metaJSON, a.stdin)
			if err != nil {
				return err
			}
			_, ing, err := a.ingester(ctx, chunk)
			if err != nil {
				return err
			}
			if !batch {
				e, err := ing.Push(ctx, key, payloads[0], md)
				if err != nil {
					return badEvent(err)
				}
				return a.pushed([]*client.EventInfo{e}, false, nil)
			}
			in := make([]events.Input, len(payloads))
			for n, p := range payloads {
				in[n] = events.Input{Key: key, Payload: p, Metadata: md}
			}
			// Every payload is checked before the first chunk is sent: a bad
			// one fails the command with nothing stored.
			if err := ing.Validate(in); err != nil {
				return badBatch(err, len(in))
			}
			var evs []*client.EventInfo
			var pushErr error
			prog := a.newProgress("pushing events:", len(in))
			for start := 0; start < len(in) && pushErr == nil; start += chunk {
				end := min(start+chunk, len(in))
				got, err := ing.PushMany(ctx, in[start:end])
				var lost []int
				for n := start; n < end; n++ {
					if got == nil || got[n-start] == nil {
						lost = append(lost, n)
						continue
					}
					evs = append(evs, got[n-start])
				}
				if err != nil {
					pushErr = notStored(lost, end, len(in), err)
				}
				prog.Add(end - start)
			}
			prog.Done()
			return a.pushed(evs, true, pushErr)
		}),
	}
	cmd.Flags().StringVar(&data, "data", "", "event payload: a JSON object, @file or - for stdin")
	cmd.Flags().StringArrayVar(&meta, "meta", nil, "event metadata key=value (repeatable; values are strings)")
	cmd.Flags().StringVar(&metaJSON, "meta-json", "", "event metadata as a JSON object, @file or -")
	cmd.Flags().BoolVar(&batch, "batch", false, "--data holds many payloads: a JSON array or one JSON value per line")
	cmd.Flags().IntVar(&chunk, "chunk", 100, "with --batch, events pushed per round trip")
	return cmd
}

// pushed prints the events that were stored, then ends with pushErr (some
// were not stored) or, failing that, with an error when a task could not
// derive its key from an event.
func (a *app) pushed(evs []*client.EventInfo, batch bool, pushErr error) error {
	// A pushed or listed event is shown as the HTTP API answers a push:
	// without its payload and metadata.
	views := make([]wire.EventResult, len(evs))
	failed := 0
	for i, e := range evs {
		views[i] = wire.EventResultOf(e)
		for _, r := range e.Runs {
			if r.Outcome == events.OutcomeError {
				failed++
			}
		}
	}
	if err := a.printPushed(views, batch); err != nil {
		return err
	}
	if pushErr != nil {
		return pushErr
	}
	if failed > 0 {
		return &eventTriggerError{failed: failed, events: len(evs)}
	}
	return nil
}

// badEvent makes an event the ingester refused (a bad key, a payload over
// a limit) a usage error: the arguments were wrong.
func badEvent(err error) error {
	if errors.Is(err, events.ErrInvalidEvent) || errors.Is(err, client.ErrInputTooLarge) {
		return withCode(exitUsage, err)
	}
	return err
}

// badBatch words an event of --batch that the ingester refuses the way the
// other --data errors are worded, numbering payloads from 1; nothing was
// stored. The key and metadata are the same for every payload, so their
// errors name no payload.
func badBatch(err error, total int) error {
	var ie *events.InvalidEventError
	var le *client.LimitError
	switch {
	case errors.As(err, &ie) && errors.As(err, &le) && ie.Field == "metadata":
		return usageErrorf("metadata is %d bytes, over the limit of %d", le.Size, le.Limit)
	case errors.As(err, &ie) && errors.As(err, &le):
		return usageErrorf("--data payload %d of %d is %d bytes, over the limit of %d", ie.Index+1, total, le.Size, le.Limit)
	case errors.As(err, &ie) && ie.Field == "key":
		return usageErrorf("event key %s", ie.Message)
	case errors.As(err, &ie) && ie.Field == "metadata":
		return usageErrorf("metadata %s", ie.Message)
	case errors.As(err, &ie):
		return usageErrorf("--data payload %d of %d %s", ie.Index+1, total, ie.Message)
	}
	return badEvent(err)
}

// notStored says which payloads of a --batch were not stored: lost are the
// ones of the chunk that failed (indexes into the batch), and every one
// from end on was never sent. The events printed are the ones stored.
func notStored(lost []int, end, total int, err error) error {
	var pe *client.BatchItemError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	nums := make([]string, len(lost))
	for i, n := range lost {
		nums[i] = strconv.Itoa(n + 1)
	}
	which := "payload " + strings.Join(nums, ", ")
	if end < total {
		which += fmt.Sprintf(" and %d-%d (not sent)", end+1, total)
	}
	return fmt.Errorf("%s of %d not stored; the events listed are: %w", which, total, err)
}

// splitBatch splits --batch data into payloads: a JSON array's elements, or
// one JSON value per line.
func splitBatch(raw []byte) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil, usageErrorf("--data is empty: --batch needs a JSON array or one JSON value per line")
	}
	if raw[0] == '[' {
		var out []json.RawMessage
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, usageErrorf("--data is not a valid JSON array: %v", err)
		}
		for i, p := range out {
			if p = bytes.TrimSpace(p); len(p) == 0 || p[0] != '{' {
				return nil, usageErrorf("--data element %d must be a JSON object, got %s", i+1, admission.JSONKind(p[0]))
			}
		}
		return out, nil
	}
	var out []json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), maxInputFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := checkJSON(line); err != nil {
			return nil, usageErrorf("--data line %d is not valid JSON: %v", n, err)
		}
		if line[0] != '{' {
			return nil, usageErrorf("--data line %d must be a JSON object, got %s", n, admission.JSONKind(line[0]))
		}
		out = append(out, append(json.RawMessage(nil), line...))
	}
	if err := sc.Err(); err != nil {
		return nil, usageErrorf("--data: %v", err)
	}
	return out, nil
}

func (a *app) printPushed(views []wire.EventResult, batch bool) error {
	p := a.printer()
	if p.json() {
		if batch {
			return p.JSON(views)
		}
		return p.JSON(views[0])
	}
	if !batch {
		v := views[0]
		if len(v.Runs) == 0 {
			_, err := fmt.Fprintf(a.stdout, "Stored event %s (%s); no task listens to %q.\n", clean(v.ID), clean(v.Key), v.Key)
			return err
		}
		fmt.Fprintf(a.stdout, "Stored event %s (%s): %s.\n", clean(v.ID), clean(v.Key), clean(summary(v.Runs)))
		return a.eventRunsTable(p, v.Runs)
	}
	rows := [][]string{}
	for _, v := range views {
		if len(v.Runs) == 0 {
			rows = append(rows, []string{v.ID, "-", "-", "-", "-"})
		}
		for _, r := range v.Runs {
			rows = append(rows, []string{v.ID, r.Task, r.Outcome, orDash(r.RunID), orDash(outcomeDetail(r))})
		}
	}
	fmt.Fprintf(a.stdout, "Stored %d event(s).\n", len(views))
	return p.Table([]string{"EVENT", "TASK", "OUTCOME", "RUN", "KEY"}, rows)
}

// outcomeDetail is the key, or the error when the key could not be derived.
func outcomeDetail(r client.EventTaskRun) string {
	if r.Error != "" {
		return r.Error
	}
	return r.IdempotencyKey
}

func (a *app) eventRunsTable(p *printer, runs []client.EventTaskRun) error {
	rows := make([][]string, len(runs))
	for i, r := range runs {
		rows[i] = []string{r.Task, r.Outcome, orDash(r.RunID), orDash(outcomeDetail(r))}
	}
	return p.Table([]string{"TASK", "OUTCOME", "RUN", "KEY"}, rows)
}

func (a *app) eventsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get ID",
		Short: "Show an event: payload, metadata and the runs it created or was deduplicated to",
		Example: `  taskq events get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10
  taskq events get 0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10 -o json | jq .runs`,
		Args: argNames([]string{"ID"}),
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, _, err := a.ingester(ctx, 0)
			if err != nil {
				return err
			}
			e, err := c.Inspector().GetEvent(ctx, args[0])
			if err != nil {
				return err
			}
			v := e
			p := a.printer()
			if p.json() {
				// The same body as GET /api/v1/events/{id}.
				return p.JSON(v)
			}
			if err := p.Fields([][2]string{
				{"ID", v.ID}, {"Key", v.Key}, {"Created", formatTime(e.CreatedAt)},
				{"Payload", compactJSON(v.Payload)}, {"Metadata", metaCell(v.Metadata)},
			}); err != nil {
				return err
			}
			if len(v.Runs) == 0 {
				_, err := fmt.Fprintln(a.stdout, "\nNo task listens to this event.")
				return err
			}
			fmt.Fprintln(a.stdout)
			return a.eventRunsTable(p, v.Runs)
		}),
	}
}

func (a *app) eventsLsCmd() *cobra.Command {
	var key string
	var limit, offset int
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List ingested events, newest first",
		Example: `  taskq events ls
  taskq events ls --key webhook.received --limit 50
  taskq events ls -o json | jq -r '.[].id'`,
		Args: argNames(nil),
		PreRunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return usageErrorf("invalid --limit %d: must be at least 1", limit)
			}
			if offset < 0 {
				return usageErrorf("invalid --offset %d: must not be negative", offset)
			}
			return nil
		},
		RunE: a.action(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			c, _, err := a.ingester(ctx, 0)
			if err != nil {
				return err
			}
			evs, err := listEvents(ctx, c.Inspector(), key, limit, offset)
			if err != nil {
				return err
			}
			views := make([]wire.EventResult, len(evs))
			for i, e := range evs {
				views[i] = wire.EventResultOf(e)
			}
			p := a.printer()
			if p.json() {
				return p.JSON(views)
			}
			if len(views) == 0 {
				_, err := fmt.Fprintln(a.stdout, "No events found.")
				return err
			}
			rows := make([][]string, len(views))
			for i, v := range views {
				rows[i] = []string{v.ID, v.Key, summary(v.Runs), formatTime(*v.CreatedAt)}
			}
			return p.Table([]string{"ID", "KEY", "RUNS", "CREATED"}, rows)
		}),
	}
	cmd.Flags().StringVar(&key, "key", "", "only events with this key")
	cmd.Flags().IntVar(&limit, "limit", 20, "list at most this many events")
	cmd.Flags().IntVar(&offset, "offset", 0, "skip this many of the newest events")
	return cmd
}

// listEvents returns limit events (default events.ListLimitDefault, at
// most events.ListLimitMax) newest first, after skipping offset of them,
// walking the Inspector's pages.
func listEvents(ctx context.Context, in *client.Inspector, key string, limit, offset int) ([]*client.EventInfo, error) {
	if limit < 0 || offset < 0 {
		return nil, fmt.Errorf("events: list: limit %d and offset %d must not be negative", limit, offset)
	}
	if limit == 0 {
		limit = events.ListLimitDefault
	}
	if limit > events.ListLimitMax {
		return nil, fmt.Errorf("events: list: limit %d is over the maximum of %d", limit, events.ListLimitMax)
	}
	out := []*client.EventInfo{}
	cursor := ""
	for {
		page, err := in.ListEvents(ctx, client.ListOptions{Key: key, Cursor: cursor, Limit: client.ListLimitMax})
		if err != nil {
			return nil, err
		}
		for _, e := range page.Items {
			if offset > 0 {
				offset--
				continue
			}
			out = append(out, e)
			if len(out) == limit {
				return out, nil
			}
		}
		if page.NextCursor == "" {
			return out, nil
		}
		cursor = page.NextCursor
	}
}
