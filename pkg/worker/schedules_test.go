package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// A worker registers its Options.Schedules when it starts and its
// scheduler fires their ticks, which its handler runs.
func TestWorkerRegistersAndFiresItsSchedules(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[json.RawMessage, json.RawMessage]("cron-heartbeat", task.Options{})
		ran := make(chan string, 100)
		startWorker(t, b, worker.Options{Schedules: []task.Schedule{{Name: "beat", Task: tk.Name(), Cron: "@every 1s",
			Input: []byte(`{"from":"cron"}`)}}}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
				ran <- string(in)
				return in, nil
			})
		})
		c := newClient(t, b)
		info, err := c.Schedules().Get(ctx, "beat")
		if err != nil || info.Schedule.Task != tk.Name() {
			t.Fatalf("registered schedule = %+v, %v", info, err)
		}
		eventually(t, "a tick's run", func() bool { return len(ran) > 0 })
		if got := <-ran; got != `{"from":"cron"}` {
			t.Fatalf("the tick's run got input %s", got)
		}
	})
}

// A bad schedule in Options fails New with its *task.ConfigError, and
// Schedules need the scheduler.
func TestWorkerRefusesBadSchedules(t *testing.T) {
	_, err := worker.New(worker.Options{RedisURL: "redis://127.0.0.1:1", Schedules: []task.Schedule{{Name: "s", Task: "t", Cron: "@often"}}})
	var se *task.ConfigError
	if !errors.As(err, &se) || !errors.Is(err, task.ErrInvalidSchedule) || se.Schedule != "s" || se.Field != "cron" {
		t.Fatalf("New = %v, want a schedule *task.ConfigError on cron", err)
	}
	ok := task.Schedule{Name: "s", Task: "t", Cron: "@hourly"}
	if _, err := worker.New(worker.Options{RedisURL: "redis://127.0.0.1:1", Schedules: []task.Schedule{ok, ok}}); err == nil {
		t.Fatal("New accepted one schedule twice")
	}
	if _, err := worker.New(worker.Options{RedisURL: "redis://127.0.0.1:1", NoScheduler: true, Schedules: []task.Schedule{ok}}); err == nil {
		t.Fatal("New accepted Schedules with NoScheduler")
	}
}
