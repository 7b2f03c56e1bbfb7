package taskqtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

func sendMail(ctx worker.Context, s signup) (welcome, error) {
	return welcome{Email: s.Email, Sent: true}, nil
}

// Work runs every queued run through a worker, one at a time in the order
// they were queued, and returns them ended; the client sees the same
// outcome.
func TestWorkRunsQueuedRuns(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if runs := taskqtest.Work(ctx, t, h, sendWelcome, sendMail); len(runs) != 0 {
		t.Fatalf("Work with nothing queued returned %d runs", len(runs))
	}
	emails := []string{"a@example.com", "b@example.com", "c@example.com"}
	refs := make([]*client.RunRef[welcome], len(emails))
	for i, e := range emails {
		refs[i] = trigger(t, h, signup{Email: e})
	}
	var mu sync.Mutex
	var order []string
	runs := taskqtest.Work(ctx, t, h, sendWelcome, func(wctx worker.Context, s signup) (welcome, error) {
		mu.Lock()
		order = append(order, s.Email)
		mu.Unlock()
		if wctx.IdempotencyKey() != "welcome:"+s.Email || wctx.Attempt() != 1 {
			return welcome{}, fmt.Errorf("context: key %q attempt %d", wctx.IdempotencyKey(), wctx.Attempt())
		}
		return sendMail(wctx, s)
	})
	if len(runs) != len(emails) {
		t.Fatalf("Work returned %d runs, want %d", len(runs), len(emails))
	}
	for i, r := range runs {
		out, err := r.Result()
		if err != nil || r.Info.ID != refs[i].ID() || r.Info.Status != client.StatusSucceeded || r.Info.Attempt != 1 ||
			out != (welcome{Email: emails[i], Sent: true}) || (r.Info.Status == client.StatusQueued && r.Info.Attempt > 0) {
			t.Fatalf("run %d = %s %s attempt %d, result %+v, %v; want %s succeeded at once for %s",
				i, r.Info.ID, r.Info.Status, r.Info.Attempt, out, err, refs[i].ID(), emails[i])
		}
		if got, err := refs[i].Result(ctx); err != nil || got != out {
			t.Fatalf("client sees result %+v, %v; want %+v", got, err, out)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != fmt.Sprint(emails) {
		t.Fatalf("handled in order %v, want %v (the order of the triggers)", order, emails)
	}
	// Nothing is left: a second Work has nothing to do.
	if runs := taskqtest.Work(ctx, t, h, sendWelcome, sendMail); len(runs) != 0 {
		t.Fatalf("second Work returned %d runs, want none", len(runs))
	}
}

var errDeclined = errors.New("card declined")

// A failed attempt with a retry left is returned waiting for it; the retry
// falls due only when the harness's time is advanced past the backoff, and
// a run that fails its last attempt ends failed.
func TestWorkLeavesRetriesUntilAdvanced(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	ok, err := client.RunNoWait(ctx, c, chargeInvoice, invoice{ID: "in_1"})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := client.RunNoWait(ctx, c, chargeInvoice, invoice{ID: "in_2"})
	if err != nil {
		t.Fatal(err)
	}
	// in_1 fails its first attempt only; in_2 fails every attempt.
	charge := func(wctx worker.Context, in invoice) (string, error) {
		if in.ID == "in_2" || wctx.Attempt() == 1 {
			return "", errDeclined
		}
		return "ch_" + in.ID, nil
	}

	runs := taskqtest.Work(ctx, t, h, chargeInvoice, charge)
	if len(runs) != 2 {
		t.Fatalf("Work returned %d runs, want 2", len(runs))
	}
	for i, r := range runs {
		if _, err := r.Result(); !(r.Info.Status == client.StatusQueued && r.Info.Attempt > 0) || r.Info.Attempt != 1 || !errors.Is(err, taskqtest.ErrNotEnded) {
			t.Fatalf("run %d after the first attempt: %s attempt %d, %v; want waiting for its retry", i, r.Info.Status, r.Info.Attempt, err)
		}
	}
	// The key is held through the retries (status strategy).
	if k, err := c.Inspector().GetKey(ctx, "invoice:in_1"); err != nil || k.OwnerRunID != ok.ID() {
		t.Fatalf("key while retrying: %+v, %v; want held by %s", k, err, ok.ID())
	}
	// Time stands still: the retries are not due.
	if runs := taskqtest.Work(ctx, t, h, chargeInvoice, charge); len(runs) != 0 {
		t.Fatalf("Work before the backoff passed returned %d runs, want none", len(runs))
	}
	h.Advance(59 * time.Second)
	if runs := taskqtest.Work(ctx, t, h, chargeInvoice, charge); len(runs) != 0 {
		t.Fatalf("Work a second before the retry is due returned %d runs, want none", len(runs))
	}
	h.Advance(time.Second)
	runs = taskqtest.Work(ctx, t, h, chargeInvoice, charge)
	if len(runs) != 2 || runs[0].Info.ID != ok.ID() || runs[1].Info.ID != bad.ID() {
		t.Fatalf("Work after the backoff returned %d runs, want %s and %s", len(runs), ok.ID(), bad.ID())
	}
	if out, err := runs[0].Result(); err != nil || out != "ch_in_1" || runs[0].Info.Attempt != 2 {
		t.Fatalf("in_1 after its retry: %q, %v, attempt %d; want ch_in_1 at attempt 2", out, err, runs[0].Info.Attempt)
	}
	var failed *client.RunError
	if _, err := runs[1].Result(); !errors.As(err, &failed) || failed.Attempts != 2 || failed.Message != errDeclined.Error() {
		t.Fatalf("in_2 after its last attempt: %v; want a failure after 2 attempts with %q", err, errDeclined)
	}
	// A run that ended released its key.
	var notHeld *client.StateError
	if _, err := c.Inspector().GetKey(ctx, "invoice:in_2"); !(errors.As(err, &notHeld) && notHeld.Kind == client.ErrKeyNotHeld) {
		t.Fatalf("key of the failed run: %v; want released", err)
	}
}

// A handler that panics or fails for good ends its run failed; Work still
// returns it.
func TestWorkReportsFailures(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	trigger(t, h, signup{Email: "panic@example.com"})
	trigger(t, h, signup{Email: "bounce@example.com"})
	runs := taskqtest.Work(ctx, t, h, sendWelcome, func(wctx worker.Context, s signup) (welcome, error) {
		if s.Email == "panic@example.com" {
			panic("template missing")
		}
		return welcome{}, worker.NonRetryable(errors.New("mailbox unknown"))
	})
	if len(runs) != 2 {
		t.Fatalf("Work returned %d runs, want 2", len(runs))
	}
	for _, r := range runs {
		var failed *client.RunError
		if _, err := r.Result(); !errors.As(err, &failed) || r.Info.Status != client.StatusFailed {
			t.Fatalf("run for %s: %s, %v; want failed", r.Input.Email, r.Info.Status, err)
		}
	}
	taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithStatus(client.StatusFailed),
		taskqtest.Where(func(s signup) bool { return s.Email == "bounce@example.com" }))
}

// Work does not compete with a worker the harness runs for the same task,
// and says so.
func TestWorkRefusesATaskAWorkerHandles(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	h.StartWorker(func(w *worker.Worker) error { return worker.Handle(w, sendWelcome, sendMail) })
	msg := failure(t, func(tb testing.TB) { taskqtest.Work(context.Background(), tb, h, sendWelcome, sendMail) })
	wantAll(t, msg, "Work(send-welcome): a worker started on the harness handles this task")
	// Another task is fine.
	if runs := taskqtest.Work(context.Background(), t, h, chargeInvoice, func(worker.Context, invoice) (string, error) { return "", nil }); len(runs) != 0 {
		t.Fatalf("Work of an idle task returned %d runs", len(runs))
	}
}

// Work fails the test, naming the runs not done, when its context ends
// first; its worker is stopped all the same, cancelling the handler.
func TestWorkGivesUpWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ref := trigger(t, h, signup{Email: "slow@example.com"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	msg := failure(t, func(tb testing.TB) {
		taskqtest.Work(ctx, tb, h, sendWelcome, func(wctx worker.Context, s signup) (welcome, error) {
			cancel() // the test gives up while the handler runs
			<-wctx.Done()
			stopped <- context.Cause(wctx)
			return welcome{}, wctx.Err()
		})
	})
	wantAll(t, msg, "Work(send-welcome): runs not done when the context ended (context canceled): run "+ref.ID()+" is ")
	if err := <-stopped; !errors.Is(err, worker.ErrShutdown) {
		t.Fatalf("handler stopped by %v, want worker.ErrShutdown", err)
	}
}

type digest struct {
	User  string `json:"user"`
	Count int    `json:"count"`
}

// digestMail waits for a quiet minute, then sends the newest digest.
var digestMail = task.Must[digest, int]("digest-mail", task.Options{
	Idempotency: task.Debounce(`"digest:" + input.user`, time.Minute),
})

// A debounced run is due only once its quiet window has passed on the
// harness's clock, and then runs once with the newest input.
func TestWorkWaitsForDebounceWindows(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for n := 1; n <= 3; n++ {
		if _, err := client.RunNoWait(ctx, h.Client(), digestMail, digest{User: "ada", Count: n}); err != nil {
			t.Fatal(err)
		}
		h.Advance(30 * time.Second)
	}
	count := func(_ worker.Context, d digest) (int, error) { return d.Count, nil }
	// The last trigger was 30s ago: the window has 30s to go.
	if runs := taskqtest.Work(ctx, t, h, digestMail, count); len(runs) != 0 {
		t.Fatalf("Work inside the quiet window returned %d runs, want none", len(runs))
	}
	r := taskqtest.RequireTriggered(t, h, digestMail, taskqtest.WithStatus(client.StatusQueued))
	if r.Input.Count != 3 {
		t.Fatalf("debounced run holds count %d, want the newest, 3", r.Input.Count)
	}
	h.Advance(30 * time.Second)
	runs := taskqtest.Work(ctx, t, h, digestMail, count)
	if len(runs) != 1 || runs[0].Info.ID != r.Info.ID {
		t.Fatalf("Work after the window returned %d runs, want %s", len(runs), r.Info.ID)
	}
	if got, err := runs[0].Result(); err != nil || got != 3 {
		t.Fatalf("result %d, %v; want 3", got, err)
	}
}
