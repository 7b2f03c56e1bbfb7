package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

var partsFlaky = task.Must[json.RawMessage, json.RawMessage]("parts-flaky", task.Options{
	Retries: 2, Backoff: task.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Factor: 1},
})

// The Inspector shows a run's whole story: every attempt with its worker,
// times and error (the two that failed and were retried, then the one
// that succeeded), the signals sent to it page by page in order, and its
// durable steps; GetRun carries the attempts and the counts.
func TestInspectorShowsAttemptsSignalsAndSteps(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "w-parts",
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FetchBlock: 50 * time.Millisecond,
			ShutdownTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.HandleJSON(partsFlaky.Definition(), func(wc worker.Context, _ json.RawMessage) (json.RawMessage, error) {
			if _, err := worker.Step(wc, "charge", func(context.Context, string) (string, error) { return "ch_1", nil }); err != nil {
				return nil, err
			}
			if wc.Attempt() < 3 {
				return nil, fmt.Errorf("card <declined> %d", wc.Attempt())
			}
			return json.RawMessage(`{"ok":true}`), nil
		}); err != nil {
			t.Fatal(err)
		}
		h, err := c.TriggerJSON(ctx, partsFlaky.Definition(), []byte(`{"id":"1"}`))
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			res, err := clientlink.Store(c).SignalRun(ctx, h.ID(), fmt.Sprint("s", i), []byte(fmt.Sprintf(`{"n":%d}`, i)), 10)
			if err != nil || !res.Delivered {
				t.Fatalf("signal %d = %+v, %v", i, res, err)
			}
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
		wctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		info, err := h.Wait(wctx)
		cancel()
		if err != nil || info.Status != client.StatusSucceeded {
			t.Fatalf("run = %+v, %v; want succeeded at its third attempt", info, err)
		}

		got, err := in.GetRun(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Attempts) != 3 || got.SignalCount != 3 || got.StepCount != 1 {
			t.Fatalf("run has %d attempts, %d signals, %d steps; want 3, 3, 1: %+v", len(got.Attempts), got.SignalCount, got.StepCount, got.Attempts)
		}
		for i, a := range got.Attempts {
			want := client.AttemptRetry
			if i == 2 {
				want = client.AttemptSucceeded
			}
			if a.Attempt != i+1 || a.Outcome != want || a.Worker == "" || a.StartedAt == nil || a.EndedAt == nil ||
				a.EndedAt.Before(*a.StartedAt) {
				t.Errorf("attempt %d = %+v; want %s with its worker and times", i+1, a, want)
			}
			if wantErr := fmt.Sprintf("card <declined> %d", i+1); i < 2 && a.Error != wantErr {
				t.Errorf("attempt %d error = %q, want %q", i+1, a.Error, wantErr)
			}
		}
		// Signals, one per page, in the order sent.
		var ids []string
		cursor := ""
		for range 4 {
			page, err := in.RunSignals(ctx, h.ID(), client.ListOptions{Cursor: cursor, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page.Items {
				ids = append(ids, s.SignalID+" "+string(s.Payload))
				if s.SentAt.IsZero() {
					t.Errorf("signal %s has no time", s.SignalID)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if fmt.Sprint(ids) != `[s0 {"n":0} s1 {"n":1} s2 {"n":2}]` {
			t.Errorf("signals = %v", ids)
		}
		steps, err := in.RunSteps(ctx, h.ID(), client.ListOptions{})
		if err != nil || len(steps.Items) != 1 || steps.Items[0].Name != "charge" || string(steps.Items[0].Result) != `"ch_1"` || steps.NextCursor != "" {
			t.Errorf("steps = %+v, %v", steps, err)
		}

		// What cannot be read says why.
		for name, err := range map[string]error{
			"run": func() error { _, err := in.GetRun(ctx, "0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10"); return err }(),
			"signals": func() error {
				_, err := in.RunSignals(ctx, "0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10", client.ListOptions{})
				return err
			}(),
			"steps": func() error {
				_, err := in.RunSteps(ctx, "0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10", client.ListOptions{})
				return err
			}(),
		} {
			if !errors.Is(err, client.ErrRunNotFound) {
				t.Errorf("%s of a missing run: %v, want ErrRunNotFound", name, err)
			}
		}
		if _, err := in.RunSignals(ctx, h.ID(), client.ListOptions{Cursor: "nope"}); !errors.Is(err, client.ErrInvalidCursor) {
			t.Errorf("signals from a bad cursor: %v", err)
		}
		if _, err := in.RunSteps(ctx, h.ID(), client.ListOptions{Cursor: "x"}); !errors.Is(err, client.ErrInvalidCursor) {
			t.Errorf("steps from a bad cursor: %v", err)
		}
		if _, err := in.RunSteps(ctx, h.ID(), client.ListOptions{Limit: client.ListLimitMax + 1}); !errors.Is(err, client.ErrInvalidListOption) {
			t.Errorf("steps with too large a page: %v", err)
		}
	})
}

// A run that has begun no attempt has none; one whose first attempt
// succeeded has that one, from its record.
func TestInspectorAttemptsOfAQueuedRun(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		h, err := c.TriggerJSON(ctx, partsFlaky.Definition(), []byte(`{"id":"2"}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Inspector().GetRun(ctx, h.ID())
		if err != nil || len(got.Attempts) != 0 || got.SignalCount != 0 || got.StepCount != 0 {
			t.Fatalf("queued run = %+v, %v; want no attempts, signals or steps", got, err)
		}
		raw, _ := json.Marshal(got)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		if _, ok := m["attempts"]; ok {
			t.Errorf("a run with no attempts has an attempts field: %s", raw)
		}
	})
}
