// Command onboarding-worker runs the task of package examples/onboarding,
// whose runs sleep and wait for an event without holding a worker (see
// docs/workflows.md). Mails are printed, not sent.
//
//	go run ./examples/onboarding-worker -redis redis://127.0.0.1:6379/0 -reminder 10s
//
// Then sign someone up, watch the run wait, and verify the account:
//
//	taskq runs trigger onboard --input '{"email":"ada@example.com"}'
//	taskq runs get <run id>
//	taskq events push account.verified --payload '{"email":"ada@example.com"}'
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/taskq/taskq/examples/onboarding"
	"github.com/taskq/taskq/pkg/worker"
)

func main() {
	redisURL := flag.String("redis", "", "Redis URL (default $TASKQ_REDIS_URL, then redis://127.0.0.1:6379/0)")
	namespace := flag.String("namespace", os.Getenv("TASKQ_NAMESPACE"), "taskq namespace (default \"default\")")
	reminder := flag.Duration("reminder", 24*time.Hour, "how long after the welcome mail the reminder goes out")
	patience := flag.Duration("patience", 7*24*time.Hour, "how long to wait for the verification after the reminder")
	flag.Parse()

	w, err := worker.New(worker.Options{RedisURL: *redisURL, Namespace: *namespace,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err == nil {
		err = onboarding.Register(w, onboarding.Handler{Reminder: *reminder, Patience: *patience,
			Mail: func(_ context.Context, stepID, to, template string) error {
				fmt.Printf("mail %s to %s (%s)\n", template, to, stepID)
				return nil
			}})
	}
	if err == nil {
		err = w.Run(context.Background())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "onboarding-worker:", err)
		os.Exit(1)
	}
}
