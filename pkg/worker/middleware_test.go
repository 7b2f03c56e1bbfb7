package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type spanKey struct{}

// Middleware runs around every handler, the first outermost; it sees the
// run (ID, task, metadata, input and output), can hand the handler a
// context of its own, and its error decides the outcome.
func TestMiddlewareWrapsEveryHandler(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	ctx := context.Background()
	c := newClient(t, b)
	var mu sync.Mutex
	var trail []string
	note := func(s string) { mu.Lock(); trail = append(trail, s); mu.Unlock() }
	tracing := func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(wc worker.Context, in json.RawMessage) (json.RawMessage, error) {
			var meta map[string]string
			_ = json.Unmarshal(wc.Metadata(), &meta)
			note("trace " + wc.TaskName() + " " + meta["traceparent"] + " " + string(in))
			out, err := next(worker.WithContext(context.WithValue(wc, spanKey{}, wc.RunID()), wc), in)
			note("trace end " + string(out))
			return out, err
		}
	}
	gate := func(next worker.HandlerFunc) worker.HandlerFunc {
		return func(wc worker.Context, in json.RawMessage) (json.RawMessage, error) {
			note("gate")
			if string(in) == `{"id":"blocked"}` {
				return nil, worker.NonRetryable(errors.New("blocked by policy"))
			}
			return next(wc, in)
		}
	}
	tk := task.Must[in, out]("wrapped", task.Options{})
	startWorker(t, b, worker.Options{Middleware: []worker.Middleware{tracing, gate}}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			span, _ := ctx.Value(spanKey{}).(string)
			note("handler span=" + span + " run=" + ctx.RunID())
			return out{ID: x.ID}, nil
		})
	})
	ref, err := client.RunNoWait(ctx, c, tk, in{ID: "a"}, client.WithMetadata(map[string]any{"traceparent": "00-abc-01"}))
	if err != nil {
		t.Fatal(err)
	}
	if info := wait(t, ref); info.Status != client.StatusSucceeded {
		t.Fatalf("status = %s", info.Status)
	}
	mu.Lock()
	got := append([]string(nil), trail...)
	mu.Unlock()
	want := []string{`trace wrapped 00-abc-01 {"id":"a"}`, "gate", "handler span=" + ref.ID() + " run=" + ref.ID(), `trace end {"id":"a","stepId":""}`}
	if len(got) != len(want) {
		t.Fatalf("trail = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("trail[%d] = %q, want %q", i, got[i], want[i])
		}
	}
	blocked, err := client.RunNoWait(ctx, c, tk, in{ID: "blocked"})
	if err != nil {
		t.Fatal(err)
	}
	if info := wait(t, blocked); info.Status != client.StatusFailed || info.Error != "blocked by policy" {
		t.Fatalf("blocked run: %s %q, want failed by the middleware's error", info.Status, info.Error)
	}
}
