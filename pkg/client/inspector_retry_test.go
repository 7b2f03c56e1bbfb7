package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// registerDef publishes a definition as a worker would, without one.
func registerDef(t *testing.T, c *client.Client, d *task.Definition) {
	t.Helper()
	spec := taskdef.Spec(d)
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
	if _, err := clientlink.Store(c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		t.Fatal(err)
	}
}

var (
	retryFails = task.Must[json.RawMessage, json.RawMessage]("retry-fails", task.Options{
		Idempotency: task.Status(`"retry:" + input.id`, time.Hour),
	})
	retryHeld = task.Must[json.RawMessage, json.RawMessage]("retry-held", task.Options{
		Idempotency: task.TTL(`"held:" + input.id`, time.Hour),
	})
	retryFree = task.Must[json.RawMessage, json.RawMessage]("retry-free", task.Options{})
)

// A failed or cancelled run is retried as a new run with the same input
// and metadata, linked both ways; what cannot be retried says why.
func TestInspectorRetriesRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			FetchBlock: 50 * time.Millisecond, ShutdownTimeout: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.HandleJSON(retryFails.Definition(), func(worker.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("card declined")
		}); err != nil {
			t.Fatal(err)
		}
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })

		// A failed run: its status key was released when it failed.
		h, err := c.TriggerJSON(ctx, retryFails.Definition(), []byte(`{"id":"1","amount":5}`), client.WithMetadata([]byte(`{"tenant":"acme"}`)))
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		info, _ := h.Wait(wctx)
		cancel()
		if info == nil || info.Status != client.StatusFailed {
			t.Fatalf("the run ended %+v, want failed", info)
		}
		retry, err := in.RetryRun(ctx, h.ID())
		if err != nil {
			t.Fatal(err)
		}
		if retry.ID() == h.ID() || retry.TriggerInfo().Outcome != client.OutcomeCreated || retry.TriggerInfo().IdempotencyKey != "retry:1" {
			t.Fatalf("retry = %s %s key %q; want a new run created with key retry:1", retry.ID(), retry.TriggerInfo().Outcome, retry.TriggerInfo().IdempotencyKey)
		}
		got, err := in.GetRun(ctx, retry.ID())
		if err != nil || got.RetryOf != h.ID() || string(got.Input) != `{"id":"1","amount":5}` || string(got.Metadata) != `{"tenant":"acme"}` {
			t.Fatalf("the retry: %+v, %v; want retry of %s with the same input and metadata", got, err, h.ID())
		}
		if orig, err := in.GetRun(ctx, h.ID()); err != nil || orig.RetriedBy != retry.ID() {
			t.Fatalf("the original: %+v, %v; want retried by %s", orig, err, retry.ID())
		}
		var nr *client.StateError
		if _, err := in.RetryRun(ctx, h.ID()); !(errors.As(err, &nr) && nr.Kind == client.ErrNotRetryable) || nr.RetriedBy != retry.ID() || !errors.Is(err, client.ErrNotRetryable) {
			t.Fatalf("a second retry of the original: %v, want *NotRetryableError naming %s", err, retry.ID())
		}

		// A cancelled run whose ttl key is still held: a duplicate naming
		// the owner, nothing created.
		registerDef(t, c, retryHeld.Definition())
		held, err := c.TriggerJSON(ctx, retryHeld.Definition(), []byte(`{"id":"2"}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Handle(held.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		before, _ := in.ListRuns(ctx, client.ListOptions{Limit: 1000})
		var coll *client.IdempotencyCollisionError
		if _, err := in.RetryRun(ctx, held.ID()); !errors.As(err, &coll) || coll.ExistingRunID != held.ID() || coll.Key != "held:2" {
			t.Fatalf("retry under a held key: %v, want a collision naming %s", err, held.ID())
		}
		after, _ := in.ListRuns(ctx, client.ListOptions{Limit: 1000})
		if len(after.Items) != len(before.Items) {
			t.Fatalf("a refused retry created a run: %d runs, then %d", len(before.Items), len(after.Items))
		}
		if orig, _ := in.GetRun(ctx, held.ID()); orig.RetriedBy != "" {
			t.Fatalf("a refused retry linked the original to %s", orig.RetriedBy)
		}

		// A task without a key: the retry is created and linked.
		registerDef(t, c, retryFree.Definition())
		free, err := c.TriggerJSON(ctx, retryFree.Definition(), []byte(`{"n":1}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := in.RetryRun(ctx, free.ID()); !(errors.As(err, &nr) && nr.Kind == client.ErrNotRetryable) || nr.Status != client.StatusQueued {
			t.Fatalf("retry of a queued run: %v, want *NotRetryableError with status queued", err)
		}
		if _, err := c.Handle(free.ID()).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		r2, err := in.RetryRun(ctx, free.ID())
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := in.GetRun(ctx, r2.ID()); got.RetryOf != free.ID() || got.Status != client.StatusQueued {
			t.Fatalf("the retry of a keyless run: %+v", got)
		}
		if _, err := in.RetryRun(ctx, "no-such-run"); !errors.Is(err, client.ErrRunNotFound) {
			t.Fatalf("retry of a missing run: %v, want ErrRunNotFound", err)
		}
	})
}

// Bulk actions count on a dry run, refuse past their cap naming both
// numbers, and act on the runs of the filter they apply to.
func TestInspectorBulkCancelAndRetry(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		in := c.Inspector()
		registerDef(t, c, retryFree.Definition())
		var web []string
		for i := range 6 {
			src := "api"
			if i%2 == 0 {
				src = "web"
			}
			h, err := c.TriggerJSON(ctx, retryFree.Definition(), []byte(`{}`), client.WithMetadata([]byte(`{"source":"`+src+`"}`)))
			if err != nil {
				t.Fatal(err)
			}
			if src == "web" {
				web = append([]string{h.ID()}, web...)
			}
		}
		webOnly := "metadata.source=web"
		all := client.ListOptions{Task: retryFree.Name()}
		dry, err := in.CancelRuns(ctx, client.BulkOptions{Filter: all, DryRun: true, Max: 1})
		if err != nil || dry.Matched != 6 || dry.Done != 0 || len(dry.Runs) != 0 {
			t.Fatalf("dry run = %+v, %v; want 6 matched, nothing done", dry, err)
		}
		var tm *client.ListOptionError
		if _, err := in.CancelRuns(ctx, client.BulkOptions{Filter: all, Max: 5}); !errors.As(err, &tm) || tm.Option != "max" ||
			!errors.Is(err, client.ErrTooManyRuns) || !errors.Is(err, client.ErrInvalidListOption) ||
			err.Error() != "6 runs match, more than the max of 5; narrow the filter or raise max (up to 1000)" {
			t.Fatalf("over the cap: %v, want a *ListOptionError for max matching ErrTooManyRuns, 6 over 5", err)
		}
		if got, _ := in.CountRuns(ctx, client.ListOptions{}); got.Tasks[retryFree.Name()][client.StatusQueued] != 6 {
			t.Fatalf("a refused bulk cancel cancelled runs: %v", got.Tasks)
		}
		res, err := in.CancelRuns(ctx, client.BulkOptions{Filter: client.ListOptions{Where: []string{webOnly}}})
		if err != nil || res.Matched != 3 || res.Done != 3 {
			t.Fatalf("cancel of the web runs = %+v, %v; want 3 done", res, err)
		}
		for i, r := range res.Runs {
			if r.RunID != web[i] || r.Status != client.StatusCancelled {
				t.Fatalf("run %d: %+v, want %s cancelled", i, r, web[i])
			}
		}
		if res, err := in.RetryRuns(ctx, client.BulkOptions{Filter: all, DryRun: true}); err != nil || res.Matched != 3 {
			t.Fatalf("retry dry run = %+v, %v; want the 3 cancelled runs", res, err)
		}
		res, err = in.RetryRuns(ctx, client.BulkOptions{Filter: all})
		if err != nil || res.Done != 3 {
			t.Fatalf("retry = %+v, %v; want 3 done", res, err)
		}
		for _, r := range res.Runs {
			if got, err := in.GetRun(ctx, r.RetryRunID); err != nil || got.RetryOf != r.RunID {
				t.Fatalf("retry %s of %s: %+v, %v", r.RetryRunID, r.RunID, got, err)
			}
		}
		if res, err := in.RetryRuns(ctx, client.BulkOptions{Filter: all}); err != nil || res.Matched != 0 {
			t.Fatalf("retry again = %+v, %v; want nothing left to retry", res, err)
		}
		var oe *client.ListOptionError
		for _, o := range []client.BulkOptions{{Max: client.BulkMaxMax + 1}, {Max: -1}, {Filter: client.ListOptions{Limit: 5}}} {
			if _, err := in.CancelRuns(ctx, o); !errors.As(err, &oe) {
				t.Errorf("CancelRuns(%+v) = %v, want a *ListOptionError", o, err)
			}
		}
	})
}
