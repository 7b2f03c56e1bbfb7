package taskqtest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/taskqtest"
)

func trigger(t *testing.T, h *taskqtest.Harness, in signup) *client.RunRef[welcome] {
	t.Helper()
	ref, err := client.RunNoWait(context.Background(), h.Client(), sendWelcome, in)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// Each match narrows the runs the assertions count, and a trigger rejected
// as a duplicate is not a run.
func TestRequireTriggeredMatches(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	ctx := context.Background()
	ada := trigger(t, h, signup{Email: "ada@example.com", Plan: "pro"})
	trigger(t, h, signup{Email: "bob@example.com"})
	if _, err := client.RunNoWait(ctx, h.Client(), sendWelcome, signup{Email: "ada@example.com"}); !errors.Is(err, client.ErrIdempotencyCollision) {
		t.Fatalf("second signup of ada: %v, want a collision", err)
	}

	r := taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithKey("welcome:ada@example.com"))
	if r.Info.ID != ada.ID() || r.Input != (signup{Email: "ada@example.com", Plan: "pro"}) || r.Info.Status != client.StatusQueued {
		t.Fatalf("run = %s %+v %s, want %s with ada's first input, queued", r.Info.ID, r.Input, r.Info.Status, ada.ID())
	}
	if got := taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.WithInput(signup{Email: "ada@example.com", Plan: "pro"})); got.Info.ID != ada.ID() {
		t.Fatalf("WithInput found %s, want %s", got.Info.ID, ada.ID())
	}
	if got := taskqtest.RequireTriggered(t, h, sendWelcome, taskqtest.Where(func(s signup) bool { return s.Plan == "pro" })); got.Info.ID != ada.ID() {
		t.Fatalf("Where found %s, want %s", got.Info.ID, ada.ID())
	}
	runs := taskqtest.RequireTriggeredN(t, h, sendWelcome, 2, taskqtest.WithStatus(client.StatusQueued))
	if runs[0].Input.Email != "ada@example.com" || runs[1].Input.Email != "bob@example.com" {
		t.Fatalf("runs = %+v, %+v, want ada's then bob's (oldest first)", runs[0].Input, runs[1].Input)
	}
	taskqtest.RequireTriggeredN(t, h, sendWelcome, 1,
		taskqtest.Where(func(s signup) bool { return strings.HasSuffix(s.Email, "@example.com") }),
		taskqtest.WithKey("welcome:bob@example.com"))
	taskqtest.RequireTriggeredN(t, h, sendWelcome, 0, taskqtest.WithKey("welcome:eve@example.com"))
	taskqtest.RequireTriggeredN(t, h, sendWelcome, 0, taskqtest.WithStatus(client.StatusSucceeded))
	taskqtest.RequireTriggeredN(t, h, chargeInvoice, 0)
	if got := taskqtest.Runs(t, h, sendWelcome); len(got) != 2 {
		t.Fatalf("Runs = %d runs, want 2", len(got))
	}
}

// A failed assertion says what it wanted and lists what was triggered
// instead.
func TestRequireFailuresSayWhatWasTriggered(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)

	msg := failure(t, func(tb testing.TB) { taskqtest.RequireTriggered(tb, h, sendWelcome) })
	wantAll(t, msg, `RequireTriggered: want 1 run of task "send-welcome", found 0`, `no run of any task was`)

	trigger(t, h, signup{Email: "ada@example.com"})
	trigger(t, h, signup{Email: "bob@example.com", Plan: "pro"})

	msg = failure(t, func(tb testing.TB) {
		taskqtest.RequireTriggered(tb, h, sendWelcome, taskqtest.WithKey("welcome:eve@example.com"))
	})
	wantAll(t, msg,
		`want 1 run of task "send-welcome" with key "welcome:eve@example.com", found 0.`,
		`Runs of "send-welcome" (2):`,
		`queued (attempt 0)  key "welcome:ada@example.com"  input {"email":"ada@example.com"}`,
		`key "welcome:bob@example.com"  input {"email":"bob@example.com","plan":"pro"}`)

	msg = failure(t, func(tb testing.TB) {
		taskqtest.RequireTriggered(tb, h, sendWelcome, taskqtest.Where(func(s signup) bool { return s.Email != "" }))
	})
	wantAll(t, msg, `want 1 run of task "send-welcome" with Where(func(taskqtest_test.signup) bool), found 2.`)

	msg = failure(t, func(tb testing.TB) {
		taskqtest.RequireTriggeredN(tb, h, sendWelcome, 3, taskqtest.WithInput(signup{Email: "ada@example.com"}))
	})
	wantAll(t, msg, `RequireTriggeredN: want 3 runs of task "send-welcome" with input {"email":"ada@example.com"}, found 1.`)

	msg = failure(t, func(tb testing.TB) {
		taskqtest.RequireTriggeredN(tb, h, sendWelcome, 0, taskqtest.WithKey("welcome:bob@example.com"))
	})
	wantAll(t, msg, `RequireTriggeredN: want 0 runs of task "send-welcome" with key "welcome:bob@example.com", found 1.`,
		"Matching runs:", `input {"email":"bob@example.com","plan":"pro"}`)
	if strings.Contains(msg, "ada@example.com") {
		t.Errorf("RequireTriggeredN(0) listed a run that does not match:\n%s", msg)
	}

	msg = failure(t, func(tb testing.TB) { taskqtest.RequireTriggered(tb, h, chargeInvoice) })
	wantAll(t, msg, `want 1 run of task "charge-invoice", found 0.`,
		`No run of "charge-invoice" was triggered; runs were triggered of "send-welcome" (2 runs).`)

	// A match written for another task's input is a mistake in the test.
	msg = failure(t, func(tb testing.TB) {
		taskqtest.RequireTriggered(tb, h, chargeInvoice, taskqtest.WithInput(signup{Email: "ada@example.com"}))
	})
	wantAll(t, msg, `input {"email":"ada@example.com"} is written for input type taskqtest_test.signup, but task "charge-invoice" takes taskqtest_test.invoice`)

	msg = failure(t, func(tb testing.TB) { taskqtest.RequireTriggeredN(tb, h, sendWelcome, -1) })
	wantAll(t, msg, "RequireTriggeredN(-1): the count must not be negative")
}

// A run's input that does not decode as the task's input type is reported,
// not matched as a zero value.
func TestRequireReportsUndecodableInput(t *testing.T) {
	t.Parallel()
	h := taskqtest.New(t)
	// Triggered without the typed definition, as the HTTP API or another
	// language would: an email that is a number.
	def, err := task.NewDefinition(sendWelcome.Name(), task.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Client().TriggerJSON(context.Background(), def, []byte(`{"email":42}`)); err != nil {
		t.Fatal(err)
	}
	msg := failure(t, func(tb testing.TB) { taskqtest.RequireTriggered(tb, h, sendWelcome) })
	wantAll(t, msg, `of send-welcome: decode input {"email":42}`)
}
