// Package onboarding is an example of durable waits: a signup's run sends
// a welcome mail, sleeps a day without holding a worker, sends a reminder
// unless the account was verified meanwhile, and then waits (again without
// a worker) for the account.verified event of its address, for at most a
// week.
//
// Each wait ends the attempt; when it is over the run is queued again and
// its handler runs again from the top: the mails, sent in steps, are not
// sent twice. The example worker (examples/onboarding-worker) runs it.
package onboarding

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Signup is the input of Onboard.
type Signup struct {
	Email string `json:"email"`
}

// Outcome is the result of Onboard.
type Outcome struct {
	Verified bool   `json:"verified"`
	Event    string `json:"event,omitempty"` // the account.verified event
	Mails    int    `json:"mails"`           // mails sent
}

// Onboard onboards one signup, once per address.
var Onboard = task.Must[Signup, Outcome]("onboard", task.Options{
	Idempotency: task.Status(`input.email`, 30*24*time.Hour),
})

// Mailer sends a mail; stepID identifies it across attempts, for the mail
// service's own deduplication.
type Mailer func(ctx context.Context, stepID, to, template string) error

// Handler runs Onboard.
type Handler struct {
	Mail Mailer
	// Reminder is how long after the welcome mail the reminder goes out
	// (default a day); Patience how long to wait for the verification
	// after it (default a week).
	Reminder, Patience time.Duration
}

// Register registers Onboard's handler on w.
func Register(w *worker.Worker, h Handler) error {
	if h.Reminder == 0 {
		h.Reminder = 24 * time.Hour
	}
	if h.Patience == 0 {
		h.Patience = 7 * 24 * time.Hour
	}
	return worker.Handle(w, Onboard, h.onboard)
}

func (h Handler) send(ctx worker.Context, template, to string) error {
	_, err := worker.Step(ctx, template, func(ctx context.Context, stepID string) (bool, error) {
		return true, h.Mail(ctx, stepID, to, template)
	})
	return err
}

func (h Handler) onboard(ctx worker.Context, s Signup) (Outcome, error) {
	if err := h.send(ctx, "welcome", s.Email); err != nil {
		return Outcome{}, err
	}
	if err := worker.SleepFor(ctx, h.Reminder); err != nil {
		return Outcome{}, err
	}
	if err := h.send(ctx, "reminder", s.Email); err != nil {
		return Outcome{}, err
	}
	ev, err := worker.WaitForEvent(ctx, "account.verified", fmt.Sprintf("input.email == %q", s.Email), h.Patience)
	if errors.Is(err, worker.ErrWaitTimeout) {
		return Outcome{Mails: 2}, nil
	}
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Verified: true, Event: ev.ID, Mails: 2}, nil
}
