package onboarding_test

// These tests use package taskqtest, as an application's own tests would:
// copied into another module, they run with nothing installed.

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/examples/onboarding"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

// mailbox records the mails sent.
type mailbox struct {
	mu    sync.Mutex
	mails []string
}

func (m *mailbox) send(_ context.Context, _, to, template string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mails = append(m.mails, template+" "+to)
	return nil
}

func (m *mailbox) sent() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.mails...)
}

// A signup sleeps, sends its reminder once, and ends verified when the
// account.verified event of its address comes; the event of another
// address does not end it.
func TestSignupEndsVerifiedByItsEvent(t *testing.T) {
	h := taskqtest.New(t)
	var box mailbox
	h.StartWorker(func(w *worker.Worker) error {
		return onboarding.Register(w, onboarding.Handler{Mail: box.send})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	ing, err := events.New(c, events.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := client.RunNoWait(ctx, c, onboarding.Onboard, onboarding.Signup{Email: "ada@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	// Asleep for a day, then waiting for the event, without a worker slot
	// all along: the harness's clock moves the day on.
	waitFor(ctx, t, c, ref.ID(), "sleep until "+h.Now().Add(24*time.Hour).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	if got := box.sent(); len(got) != 1 {
		t.Fatalf("mails while asleep = %v; want the welcome only", got)
	}
	h.Advance(24 * time.Hour)
	waitFor(ctx, t, c, ref.ID(), "event account.verified")
	if _, err := ing.Push(ctx, "account.verified", json.RawMessage(`{"email":"bob@example.com"}`), nil); err != nil {
		t.Fatal(err)
	}
	ev, err := ing.Push(ctx, "account.verified", json.RawMessage(`{"email":"ada@example.com"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ref.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Verified || out.Event != ev.ID {
		t.Fatalf("outcome = %+v; want verified by %s", out, ev.ID)
	}
	if got := box.sent(); len(got) != 2 || got[0] != "welcome ada@example.com" || got[1] != "reminder ada@example.com" {
		t.Fatalf("mails = %v; want each once, in order", got)
	}
}

// A signup that is never verified ends unverified after its patience.
func TestSignupGivesUp(t *testing.T) {
	h := taskqtest.New(t)
	var box mailbox
	h.StartWorker(func(w *worker.Worker) error {
		return onboarding.Register(w, onboarding.Handler{Mail: box.send})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := h.Client()
	ref, err := client.RunNoWait(ctx, c, onboarding.Onboard, onboarding.Signup{Email: "eve@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, c, ref.ID(), "sleep until "+h.Now().Add(24*time.Hour).UTC().Format("2006-01-02T15:04:05.000Z07:00"))
	h.Advance(24 * time.Hour)
	waitFor(ctx, t, c, ref.ID(), "event account.verified")
	h.Advance(7 * 24 * time.Hour)
	out, err := ref.Result(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Verified || out.Mails != 2 || len(box.sent()) != 2 {
		t.Fatalf("outcome = %+v, mails %v; want unverified after both mails", out, box.sent())
	}
}

// waitFor waits until run is waiting for what.
func waitFor(ctx context.Context, t *testing.T, c *client.Client, run, what string) {
	t.Helper()
	for {
		info, err := c.Inspector().GetRun(ctx, run)
		if err == nil && info.Status == client.StatusWaiting && info.Waiting == what {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never waited for %s (last %+v, %v)", run, what, info, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
