package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/devtasks"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// fixture is a namespace with registered tasks, runs in every status, held
// keys and events, built the way a deployment builds them: a worker
// registers the example tasks and handles some runs, then stops.
type fixture struct {
	b    *redistest.Backend
	c    *client.Client
	ing  *events.Ingester
	cli  *cli
	n    *normalizer
	runs map[string]string // label -> run ID
	evs  map[string]string // label -> event ID
}

func newTestClient(t *testing.T, b *redistest.Backend) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// onePartition records one partition for b's namespace, the cluster's
// too (whose default is one per master): golden files show the run IDs and column
// widths of a namespace of one partition, whose IDs name no partition.
func onePartition(t *testing.T, b *redistest.Backend) {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Partitions: 1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Inspector().ListTasks(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func startWorker(t *testing.T, b *redistest.Backend) *worker.Worker {
	t.Helper()
	w, err := worker.New(worker.Options{
		Redis: b.Client, Namespace: b.Namespace, Name: "golden-worker", Logger: quiet,
		FetchBlock: 100 * time.Millisecond, LeaseDuration: 2 * time.Second, ShutdownTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, devtasks.ProcessOrder, devtasks.OrderHandler{}.Handle); err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, devtasks.HandleWebhook, devtasks.HandleDelivery); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return w
}

func seed(t *testing.T, b *redistest.Backend) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	f := &fixture{b: b, c: newTestClient(t, b), cli: newCLI(t, b), runs: map[string]string{}, evs: map[string]string{}}
	trigger := func(label string, o devtasks.Order) *client.RunRef[devtasks.Receipt] {
		ref, err := client.RunNoWait(ctx, f.c, devtasks.ProcessOrder, o)
		if err != nil {
			t.Fatalf("trigger %s: %v", label, err)
		}
		f.runs[label] = ref.ID()
		return ref
	}
	w := startWorker(t, b)
	if _, err := trigger("paid", devtasks.Order{OrderID: "1001", Amount: 4200}).Result(ctx); err != nil {
		t.Fatalf("paid order: %v", err)
	}
	if _, err := trigger("declined", devtasks.Order{OrderID: "1002", Amount: 0}).Result(ctx); err == nil {
		t.Fatal("an order of amount 0 succeeded")
	}
	if err := w.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	// No worker from here on: these stay queued.
	trigger("queued", devtasks.Order{OrderID: "1003", Amount: 990, Currency: "USD"})
	trigger("cancelled", devtasks.Order{OrderID: "1004", Amount: 500})
	if _, err := f.c.Handle(f.runs["cancelled"]).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	ing, err := events.New(f.c, events.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	f.ing = ing
	for _, label := range []string{"first", "dup"} {
		e, err := ing.Push(ctx, devtasks.EventKey, json.RawMessage(`{"id":"evt_1","type":"payment.succeeded"}`), json.RawMessage(`{"source":"stripe"}`))
		if err != nil {
			t.Fatal(err)
		}
		f.evs[label] = e.ID
		if len(e.Runs) != 1 {
			t.Fatalf("event %s: runs %+v, want one", label, e.Runs)
		}
		if label == "first" {
			f.runs["webhook"] = e.Runs[0].RunID
		}
	}
	f.n = &normalizer{labels: map[string]string{}, ns: b.Namespace}
	for l, id := range f.runs {
		f.n.labels[id] = "<run:" + l + ">"
	}
	for l, id := range f.evs {
		f.n.labels[id] = "<event:" + l + ">"
	}
	return f
}

// gcase is one invocation checked against a golden file.
type gcase struct {
	name  string
	args  []string
	stdin string
	code  int
}

func (f *fixture) check(t *testing.T, tc gcase) {
	t.Helper()
	r := f.cli.runIn(tc.stdin, tc.args...)
	if r.code != tc.code {
		t.Errorf("taskq %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(tc.args, " "), r.code, tc.code, r.stdout, r.stderr)
	}
	golden(t, tc.name, f.n.render(r))
}

// Every inspection command, table and JSON, against real Redis and
// miniredis: both must print exactly the golden output.
func TestInspectCommandsGolden(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		onePartition(t, b)
		f := seed(t, b)
		paid, declined, queued := f.runs["paid"], f.runs["declined"], f.runs["queued"]
		cases := []gcase{
			{name: "keys_ls", args: []string{"keys", "ls"}},
			{name: "keys_ls.json", args: []string{"keys", "ls", "-o", "json"}},
			{name: "keys_ls_match", args: []string{"keys", "ls", "--match", "order:100[12]"}},
			{name: "keys_ls_task.json", args: []string{"keys", "ls", "--task", "handle-webhook", "-o", "json"}},
			{name: "keys_ls_none", args: []string{"keys", "ls", "--match", "nothing:*"}},
			{name: "keys_get", args: []string{"keys", "get", "order:1001"}},
			{name: "keys_get.json", args: []string{"keys", "get", "webhook:evt_1", "-o", "json"}},
			{name: "keys_get_missing", args: []string{"keys", "get", "order:9999"}, code: exitNotFound},
			{name: "runs_get", args: []string{"runs", "get", paid}},
			{name: "runs_get.json", args: []string{"runs", "get", paid, "-o", "json"}},
			{name: "runs_get_failed", args: []string{"runs", "get", declined}},
			{name: "runs_get_missing", args: []string{"runs", "get", "01900000-0000-7000-8000-000000000000"}, code: exitNotFound},
			{name: "runs_ls", args: []string{"runs", "ls"}},
			{name: "runs_ls.json", args: []string{"runs", "ls", "-o", "json"}},
			{name: "runs_ls_filter", args: []string{"runs", "ls", "--task", "process-order", "--status", "failed"}},
			{name: "runs_ls_limit", args: []string{"runs", "ls", "--limit", "2"}},
			{name: "runs_result", args: []string{"runs", "result", paid}},
			{name: "runs_result.json", args: []string{"runs", "result", paid, "-o", "json"}},
			{name: "runs_result_failed", args: []string{"runs", "result", declined}, code: exitFailure},
			{name: "runs_result_failed.json", args: []string{"runs", "result", declined, "-o", "json"}, code: exitFailure},
			{name: "runs_result_pending", args: []string{"runs", "result", queued}, code: exitPending},
			{name: "runs_result_wait", args: []string{"runs", "result", queued, "--wait", "200ms"}, code: exitPending},
			{name: "tasks_ls", args: []string{"tasks", "ls"}},
			{name: "tasks_ls.json", args: []string{"tasks", "ls", "-o", "json"}},
			{name: "tasks_get", args: []string{"tasks", "get", "process-order"}},
			{name: "tasks_get.json", args: []string{"tasks", "get", "handle-webhook", "-o", "json"}},
			{name: "tasks_get_missing", args: []string{"tasks", "get", "no-such-task"}, code: exitNotFound},
			{name: "events_get", args: []string{"events", "get", f.evs["dup"]}},
			{name: "events_get.json", args: []string{"events", "get", f.evs["first"], "-o", "json"}},
			{name: "events_get_missing", args: []string{"events", "get", "01900000-0000-7000-8000-000000000000"}, code: exitNotFound},
			{name: "events_ls", args: []string{"events", "ls"}},
			{name: "events_ls.json", args: []string{"events", "ls", "--key", devtasks.EventKey, "-o", "json"}},
			{name: "eval_task", args: []string{"eval", "--task", "process-order", "--input", `{"orderId":"1001"}`}},
			{name: "eval_task.json", args: []string{"eval", "--task", "handle-webhook", "--input", `{"id":"evt_9"}`, "-o", "json"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { f.check(t, tc) })
		}
	})
}

// The commands that change something, in an order whose outcome is fixed.
func TestChangingCommandsGolden(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		onePartition(t, b)
		f := seed(t, b)
		cases := []gcase{
			{name: "runs_trigger", args: []string{"runs", "trigger", "process-order", "--input", `{"orderId":"1005","amount":100}`}},
			{name: "runs_trigger.json", args: []string{"runs", "trigger", "process-order", "--input", "-", "--meta", "tenant=acme", "-o", "json"},
				stdin: `{"orderId":"1006","amount":100}`},
			{name: "runs_trigger_duplicate", args: []string{"runs", "trigger", "process-order", "--input", `{"orderId":"1001","amount":4200}`}, code: exitCollision},
			{name: "runs_trigger_duplicate.json", args: []string{"runs", "trigger", "process-order", "--input", `{"orderId":"1003"}`, "-o", "json"}, code: exitCollision},
			{name: "runs_trigger_attach.json", args: []string{"runs", "trigger", "process-order", "--input", `{"orderId":"1003"}`, "--on-conflict", "attach", "-o", "json"}},
			{name: "runs_trigger_bad_input", args: []string{"runs", "trigger", "process-order", "--input", `{"amount":1}`}, code: exitFailure},
			{name: "runs_trigger_too_large", args: []string{"runs", "trigger", "process-order", "--input", "-"}, code: exitUsage,
				stdin: `{"orderId":"1007","note":"` + strings.Repeat("n", client.MaxInputBytesDefault) + `"}`},
			{name: "runs_trigger_missing_task", args: []string{"runs", "trigger", "no-such-task"}, code: exitNotFound},
			{name: "runs_cancel", args: []string{"runs", "cancel", f.runs["queued"]}},
			{name: "runs_cancel_ended.json", args: []string{"runs", "cancel", f.runs["paid"], "-o", "json"}},
			{name: "keys_release", args: []string{"keys", "release", "order:1001", "--yes"}},
			{name: "keys_release.json", args: []string{"keys", "release", "webhook:evt_1", "--owner", f.runs["webhook"], "-y", "-o", "json"}},
			{name: "keys_release_confirmed", args: []string{"keys", "release", "order:1002"}, stdin: "y\n"},
			{name: "keys_release_declined", args: []string{"keys", "release", "order:1004"}, stdin: "n\n", code: exitFailure},
			{name: "keys_release_missing", args: []string{"keys", "release", "order:1001", "--yes"}, code: exitNotFound},
			{name: "events_push", args: []string{"events", "push", devtasks.EventKey, "--data", `{"id":"evt_2","type":"refund.created"}`}},
			{name: "events_push_duplicate.json", args: []string{"events", "push", devtasks.EventKey, "--data", `{"id":"evt_2","type":"refund.created"}`, "--meta", "source=stripe", "-o", "json"}},
			{name: "events_push_nobody", args: []string{"events", "push", "nobody.listens", "--data", `{"id":"x"}`}},
			{name: "events_push_error", args: []string{"events", "push", devtasks.EventKey, "--data", `{"type":"no id"}`}, code: exitFailure},
			{name: "events_push_batch", args: []string{"events", "push", devtasks.EventKey, "--batch", "--data", "-"},
				stdin: "{\"id\":\"evt_3\"}\n{\"id\":\"evt_4\"}\n{\"id\":\"evt_3\"}\n"},
			{name: "events_push_batch.json", args: []string{"events", "push", devtasks.EventKey, "--batch", "--data", `[{"id":"evt_5"},{"id":"evt_5"}]`, "-o", "json"}},
			{name: "tasks_pause", args: []string{"tasks", "pause", "process-order"}},
			{name: "tasks_pause_again.json", args: []string{"tasks", "pause", "process-order", "-o", "json"}},
			{name: "tasks_ls_paused", args: []string{"tasks", "ls"}},
			{name: "tasks_get_paused.json", args: []string{"tasks", "get", "process-order", "-o", "json"}},
			{name: "tasks_get_paused", args: []string{"tasks", "get", "process-order"}},
			{name: "runs_trigger_paused", args: []string{"runs", "trigger", "process-order", "--input", `{"orderId":"1008","amount":100}`}},
			{name: "tasks_resume", args: []string{"tasks", "resume", "process-order"}},
			{name: "tasks_resume_again.json", args: []string{"tasks", "resume", "process-order", "-o", "json"}},
			{name: "tasks_pause_missing", args: []string{"tasks", "pause", "no-such-task"}, code: exitNotFound},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) { f.check(t, tc) })
		}
		// The released key is free: the same order is accepted again.
		if _, ok, _ := redisstore.StoreOf(clientlink.Store(f.c)).GetKey(context.Background(), "order:1001"); ok {
			t.Fatal("order:1001 still held after keys release")
		}
	})
}
