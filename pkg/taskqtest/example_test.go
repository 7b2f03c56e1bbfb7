package taskqtest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/taskqtest"
	"github.com/taskq/taskq/pkg/worker"
)

// Reminder is the input of a task an application defines.
type Reminder struct {
	UserID string `json:"userId"`
	Text   string `json:"text"`
}

// RemindUser sends at most one reminder per user an hour.
var RemindUser = task.Must[Reminder, bool]("remind-user", task.Options{
	Idempotency: task.TTL(`"remind:" + input.userId`, time.Hour),
})

// Remind is the application code under test: it triggers the task.
func Remind(ctx context.Context, c *client.Client, userID string) error {
	_, err := client.RunNoWait(ctx, c, RemindUser, Reminder{UserID: userID, Text: "Your trial ends soon"})
	if errors.Is(err, client.ErrIdempotencyCollision) {
		return nil // reminded within the hour
	}
	return err
}

// A test of code that triggers a task: what it triggered, what the handler
// makes of it, and what an hour later brings. In a test function, pass the
// test's t (a *testing.T); an Example has none, so this one passes a
// stand-in that panics on failure.
func Example() {
	t := newExampleT()
	defer t.finish()
	ctx := context.Background()

	h := taskqtest.New(t) // an embedded Redis and a client, closed when the test ends
	if err := Remind(ctx, h.Client(), "u1"); err != nil {
		t.Fatal(err)
	}
	if err := Remind(ctx, h.Client(), "u1"); err != nil { // a duplicate: no second run
		t.Fatal(err)
	}
	r := taskqtest.RequireTriggered(t, h, RemindUser, taskqtest.WithKey("remind:u1"))
	fmt.Println("triggered:", r.Input.Text)

	// Work the queued runs with a handler, through a real worker.
	runs := taskqtest.Work(ctx, t, h, RemindUser, func(ctx worker.Context, in Reminder) (bool, error) {
		return true, nil
	})
	sent, err := runs[0].Result()
	fmt.Println("worked:", runs[0].Info.Status, sent, err)

	// An hour later the key has expired (no sleeping: the harness's time
	// moves only when told): the next reminder is a new run.
	h.Advance(time.Hour)
	if err := Remind(ctx, h.Client(), "u1"); err != nil {
		t.Fatal(err)
	}
	taskqtest.RequireTriggeredN(t, h, RemindUser, 2, taskqtest.WithKey("remind:u1"))
	taskqtest.RequireTriggeredN(t, h, RemindUser, 0, taskqtest.WithKey("remind:u2"))
	fmt.Println("runs:", len(taskqtest.Runs(t, h, RemindUser)))
	// Output:
	// triggered: Your trial ends soon
	// worked: succeeded true <nil>
	// runs: 2
}

// A worker in the background for the rest of the test, as the
// application's worker binary would run: the code under test triggers and
// waits for the result.
func ExampleHarness_StartWorker() {
	t := newExampleT()
	defer t.finish()
	ctx := context.Background()

	h := taskqtest.New(t)
	h.StartWorker(func(w *worker.Worker) error {
		return worker.Handle(w, RemindUser, func(ctx worker.Context, in Reminder) (bool, error) {
			return in.Text != "", nil
		})
	})
	sent, err := client.Run(ctx, h.Client(), RemindUser, Reminder{UserID: "u7", Text: "Welcome"})
	fmt.Println("sent:", sent, err)
	r := taskqtest.RequireTriggered(t, h, RemindUser, taskqtest.WithStatus(client.StatusSucceeded))
	fmt.Println("run:", r.Info.Status, r.Info.IdempotencyKey)
	// Output:
	// sent: true <nil>
	// run: succeeded remind:u7
}
