package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

func newClient(t *testing.T, b *redistest.Backend, clock task.Clock) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newIngester(t *testing.T, c *client.Client, opts events.Options) *events.Ingester {
	t.Helper()
	opts.Logger = quiet
	ing, err := events.New(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	return ing
}

// echo is a handler that returns the run's input with its task name.
func echo(name string) func(worker.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
		return json.Marshal(map[string]any{"task": name, "input": in})
	}
}

// startWorker runs a real worker with an echo handler for each definition;
// it registers their subscriptions in Redis when it starts.
func startWorker(t *testing.T, b *redistest.Backend, defs ...*task.Definition) {
	t.Helper()
	w, err := worker.New(worker.Options{
		Redis: b.Client, Namespace: b.Namespace, Logger: quiet,
		LeaseDuration: 2 * time.Second, FetchBlock: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range defs {
		if err := w.HandleJSON(d, echo(d.Name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
}

func def(t *testing.T, name string, opts task.Options) *task.Definition {
	t.Helper()
	d, err := task.NewDefinition(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func waitResult(t *testing.T, c *client.Client, runID string) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := client.Ref[json.RawMessage](c, runID).Result(ctx)
	if err != nil {
		t.Fatalf("run %s: %v", runID, err)
	}
	return res
}

func countRuns(t *testing.T, c *client.Client) int {
	t.Helper()
	ids, err := clientlink.Store(c).ListRunIDs(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// The same event pushed twice inside the TTL gives one run; both events are
// stored and the second names the run it was deduplicated to.
func TestSameEventTwiceOneRun(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		startWorker(t, b, def(t, "send-receipt", task.Options{
			Idempotency: task.TTL(`"receipt:" + input.orderId`, time.Minute), OnEvents: []string{"order.paid"},
		}))
		ing := newIngester(t, c, events.Options{})
		payload := json.RawMessage(`{"orderId":"o-1"}`)
		first, err := ing.Push(ctx, "order.paid", payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := ing.Push(ctx, "order.paid", payload, json.RawMessage(`{"source":"retry"}`))
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Runs) != 1 || first.Runs[0].Outcome != events.OutcomeCreated || first.Runs[0].IdempotencyKey != "receipt:o-1" {
			t.Fatalf("first event runs = %+v", first.Runs)
		}
		if len(second.Runs) != 1 || second.Runs[0].Outcome != events.OutcomeDeduplicated || second.Runs[0].RunID != first.Runs[0].RunID {
			t.Fatalf("second event runs = %+v, want deduplicated to %s", second.Runs, first.Runs[0].RunID)
		}
		if n := countRuns(t, c); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
		for _, ev := range []*client.EventInfo{first, second} {
			got, err := c.Inspector().GetEvent(ctx, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Runs) != fmt.Sprint(ev.Runs) || string(got.Payload) != string(payload) {
				t.Fatalf("stored event %+v differs from pushed %+v", got, ev)
			}
		}
		res := waitResult(t, c, first.Runs[0].RunID)
		if !strings.Contains(string(res), `"orderId":"o-1"`) {
			t.Fatalf("result = %s", res)
		}
	})
}

// Keys are namespace-wide: two subscribed tasks whose expressions yield the
// same key share one run; prefixed expressions give each its own.
func TestTwoTasksOneKey(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		on := []string{"user.signed-up"}
		startWorker(t, b,
			def(t, "welcome", task.Options{Idempotency: task.TTL(`input.userId`, time.Minute), OnEvents: on}),
			def(t, "crm-sync", task.Options{Idempotency: task.TTL(`input.userId`, time.Minute), OnEvents: on}),
			def(t, "audit", task.Options{Idempotency: task.TTL(`"audit:" + input.userId`, time.Minute), OnEvents: on}),
			def(t, "billing", task.Options{Idempotency: task.TTL(`"billing:" + input.userId`, time.Minute), OnEvents: on}),
		)
		ing := newIngester(t, c, events.Options{})
		ev, err := ing.Push(ctx, "user.signed-up", json.RawMessage(`{"userId":"u-7"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]client.EventTaskRun{}
		for _, r := range ev.Runs {
			got[r.Task] = r
		}
		// Tasks are taken by name: crm-sync claims "u-7" before welcome does.
		if got["crm-sync"].Outcome != events.OutcomeCreated || got["welcome"].Outcome != events.OutcomeDeduplicated ||
			got["welcome"].RunID != got["crm-sync"].RunID {
			t.Fatalf("same-key tasks: %+v", ev.Runs)
		}
		if got["audit"].Outcome != events.OutcomeCreated || got["billing"].Outcome != events.OutcomeCreated ||
			got["audit"].RunID == got["billing"].RunID {
			t.Fatalf("prefixed tasks: %+v", ev.Runs)
		}
		if n := countRuns(t, c); n != 3 {
			t.Fatalf("%d runs, want 3 (one shared, one per prefixed task)", n)
		}
		if res := waitResult(t, c, got["crm-sync"].RunID); !strings.Contains(string(res), `"task":"crm-sync"`) {
			t.Fatalf("shared run result = %s", res)
		}
	})
}

// A task whose expression fails on the payload is recorded with the error;
// the event is stored and the other tasks run.
func TestExpressionErrorIsRecorded(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		on := []string{"invoice.sent"}
		startWorker(t, b,
			def(t, "needs-customer", task.Options{Idempotency: task.TTL(`input.customer.id`, time.Minute), OnEvents: on}),
			def(t, "by-invoice", task.Options{Idempotency: task.TTL(`"inv:" + input.invoice`, time.Minute), OnEvents: on}),
			def(t, "no-key", task.Options{OnEvents: on}),
		)
		ing := newIngester(t, c, events.Options{})
		ev, err := ing.Push(ctx, "invoice.sent", json.RawMessage(`{"invoice":"i-1"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Runs) != 3 {
			t.Fatalf("runs = %+v", ev.Runs)
		}
		byTask := map[string]client.EventTaskRun{}
		for _, r := range ev.Runs {
			byTask[r.Task] = r
		}
		bad := byTask["needs-customer"]
		if bad.Outcome != events.OutcomeError || bad.RunID != "" || !strings.Contains(bad.Error, "customer") {
			t.Fatalf("failing task = %+v", bad)
		}
		for _, name := range []string{"by-invoice", "no-key"} {
			if r := byTask[name]; r.Outcome != events.OutcomeCreated {
				t.Fatalf("%s = %+v", name, r)
			} else {
				waitResult(t, c, r.RunID)
			}
		}
		// A task without an expression is not deduplicated: it runs again.
		again, _ := ing.Push(ctx, "invoice.sent", json.RawMessage(`{"invoice":"i-1"}`), nil)
		for _, r := range again.Runs {
			if r.Task == "no-key" && r.Outcome != events.OutcomeCreated {
				t.Fatalf("no-key on the second event = %+v", r)
			}
		}
		stored, _ := c.Inspector().GetEvent(ctx, ev.ID)
		if fmt.Sprint(stored.Runs) != fmt.Sprint(ev.Runs) {
			t.Fatalf("stored runs = %+v", stored.Runs)
		}
	})
}

// A registered definition this process cannot build (here: an expression
// that does not compile) is recorded on each event as an error.
func TestBrokenRegisteredDefinition(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		spec := task.Spec{Name: "broken", Expression: `input.`, Strategy: task.StrategyTTL, TTLMs: 1000,
			BackoffInitialMs: 1000, BackoffFactor: 2, MaxDeliveries: 11, OnEvents: []string{"e"}}
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "w"})
		if _, err := clientlink.Store(c).RegisterTask(ctx, "broken", raw, true); err != nil {
			t.Fatal(err)
		}
		ing := newIngester(t, c, events.Options{})
		ev, err := ing.Push(ctx, "e", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Runs) != 1 || ev.Runs[0].Outcome != events.OutcomeError || !strings.Contains(ev.Runs[0].Error, "task definition") {
			t.Fatalf("runs = %+v", ev.Runs)
		}
	})
}

func TestInvalidEventsWriteNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		ing := newIngester(t, c, events.Options{MaxBatch: 3})
		huge := json.RawMessage(`{"x":"` + strings.Repeat("a", client.MaxInputBytesDefault) + `"}`)
		deep := json.RawMessage(`{"a":` + strings.Repeat("[", 64) + strings.Repeat("]", 64) + `}`)
		cases := []struct {
			name string
			push func() error
			is   error
			msg  string
		}{
			{"empty key", func() error { _, err := ing.Push(ctx, "", nil, nil); return err }, events.ErrInvalidEvent, "key must not be empty"},
			{"key with a space", func() error { _, err := ing.Push(ctx, "a b", nil, nil); return err }, events.ErrInvalidEvent, "whitespace"},
			{"payload not JSON", func() error { _, err := ing.Push(ctx, "k", json.RawMessage(`{"a":`), nil); return err }, events.ErrInvalidEvent, "payload is not valid JSON"},
			{"payload an array", func() error { _, err := ing.Push(ctx, "k", json.RawMessage(`[1]`), nil); return err }, events.ErrInvalidEvent, "payload must be a JSON object, got an array"},
			{"metadata a string", func() error { _, err := ing.Push(ctx, "k", nil, json.RawMessage(`"x"`)); return err }, events.ErrInvalidEvent, "metadata must be a JSON object"},
			{"payload too large", func() error { _, err := ing.Push(ctx, "k", huge, nil); return err }, client.ErrInputTooLarge, "event: payload is"},
			{"one large event in a batch", func() error {
				_, err := ing.PushMany(ctx, []events.Input{{Key: "ok"}, {Key: "ok", Payload: huge}})
				return err
			}, events.ErrInvalidEvent, "event #1: payload is"},
			// No task is subscribed to k, so no key expression reads the
			// payload: the depth is checked all the same.
			{"payload nested too deep", func() error { _, err := ing.Push(ctx, "k", deep, nil); return err },
				events.ErrInvalidEvent, "payload nests deeper than the limit of 64 levels"},
			{"metadata nested too deep", func() error { _, err := ing.Push(ctx, "k", nil, deep); return err },
				events.ErrInvalidEvent, "metadata nests deeper than the limit of 64 levels"},
			{"one deep event in a batch", func() error {
				_, err := ing.PushMany(ctx, []events.Input{{Key: "ok"}, {Key: "ok", Payload: deep}})
				return err
			}, events.ErrInvalidEvent, "event #1: payload nests deeper"},
			{"batch too large", func() error {
				_, err := ing.PushMany(ctx, make([]events.Input, 4))
				return err
			}, client.ErrInputTooLarge, "batch is 4 events, over the limit of 3"},
			{"one bad event in a batch", func() error {
				_, err := ing.PushMany(ctx, []events.Input{{Key: "ok"}, {Key: "ok", Payload: json.RawMessage(`7`)}})
				return err
			}, events.ErrInvalidEvent, "event #1: payload must be a JSON object, got a number"},
		}
		for _, tc := range cases {
			err := tc.push()
			if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("%s: error %v, want %v containing %q", tc.name, err, tc.is, tc.msg)
			}
		}
		keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace)
		if err != nil || len(keys) != 0 {
			t.Fatalf("rejected events left keys: %v", keys)
		}
	})
}

// PushMany goes out in one round trip; List reads events back newest first,
// by key, and pages.
func TestPushManyAndList(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		clock := &fakeClock{now: time.Now()}
		c := newClient(t, b, clock)
		spec := task.Spec{Name: "count", Expression: `input.n`, Strategy: task.StrategyTTL, TTLMs: 60000,
			BackoffInitialMs: 1000, BackoffFactor: 2, MaxDeliveries: 11, OnEvents: []string{"tick"}}
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "w"})
		clientlink.Store(c).RegisterTask(ctx, "count", raw, true)
		ing := newIngester(t, c, events.Options{})
		var in []events.Input
		for n := 0; n < 5; n++ {
			key := "tick"
			if n%2 == 1 {
				key = "tock"
			}
			in = append(in, events.Input{Key: key, Payload: json.RawMessage(fmt.Sprintf(`{"n":"%d"}`, n%3))})
		}
		evs, err := ing.PushMany(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		// tick events carry n = 0, 2, 1: three distinct keys, three runs.
		created := 0
		for _, e := range evs {
			for _, r := range e.Runs {
				if r.Outcome == events.OutcomeCreated {
					created++
				}
			}
		}
		if created != 3 {
			t.Fatalf("created %d runs, want 3: %+v", created, evs)
		}
		ticks, err := listEvents(ctx, c, listOpts{Key: "tick"})
		if err != nil || len(ticks) != 3 {
			t.Fatalf("tick events = %d, %v", len(ticks), err)
		}
		all, _ := listEvents(ctx, c, listOpts{Limit: 2, Offset: 1})
		if len(all) != 2 {
			t.Fatalf("page = %+v", all)
		}
		if _, err := c.Inspector().GetEvent(ctx, "no-such-event"); !errors.Is(err, events.ErrEventNotFound) {
			t.Fatalf("Get of a missing event: %v", err)
		}
		if _, err := listEvents(ctx, c, listOpts{Limit: events.ListLimitMax + 1}); err == nil {
			t.Fatal("List accepted a limit over the maximum")
		}
	})
}

// Event records expire after Retention and pushes sweep their index
// entries.
func TestRetention(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	clock := &fakeClock{now: time.Now()}
	c := newClient(t, b, clock)
	ing := newIngester(t, c, events.Options{Retention: time.Hour})
	old, err := ing.Push(ctx, "k", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Mini.FastForward(time.Hour + time.Minute)
	clock.Add(time.Hour + time.Minute)
	if _, err := c.Inspector().GetEvent(ctx, old.ID); !errors.Is(err, events.ErrEventNotFound) {
		t.Fatalf("expired event: %v", err)
	}
	fresh, _ := ing.Push(ctx, "k", nil, nil) // sweeps: the last sweep is over a minute old
	ids, _ := clientlink.Store(c).ListEventIDs(ctx, "", 0, 10)
	if fmt.Sprint(ids) != "["+fresh.ID+"]" {
		t.Fatalf("events index = %v, want only %s", ids, fresh.ID)
	}
}

func TestOptionsAreValidated(t *testing.T) {
	c := newClient(t, redistest.Mini(t), nil)
	for _, o := range []events.Options{{Retention: time.Millisecond}, {MaxBatch: -1}} {
		if _, err := events.New(c, o); err == nil {
			t.Errorf("New accepted %+v", o)
		}
	}
	if _, err := events.New(nil, events.Options{}); err == nil {
		t.Error("New accepted a nil client")
	}
}

// Two workers registering different definitions under one name never
// drift silently: the second replaces the registration with a warning (or
// is refused), and ingestion follows the registered definition.
func TestRedefinedTaskIsWarnedAboutAndFollowed(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b, nil)
		ing := newIngester(t, c, events.Options{RefreshInterval: -1})
		on := []string{"user.updated"}
		startWorker(t, b, def(t, "notify", task.Options{Idempotency: task.TTL(`"v1:" + input.id`, time.Minute), OnEvents: on}))
		ev, err := ing.Push(ctx, "user.updated", json.RawMessage(`{"id":"u-1"}`), nil)
		if err != nil || ev.Runs[0].IdempotencyKey != "v1:u-1" {
			t.Fatalf("first definition: %+v, %v", ev, err)
		}

		refused, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, RefuseDefinitionConflict: true})
		if err != nil {
			t.Fatal(err)
		}
		v2 := def(t, "notify", task.Options{Idempotency: task.TTL(`"v2:" + input.id`, time.Minute), OnEvents: on})
		refused.HandleJSON(v2, echo("notify"))
		if err := refused.Start(ctx); !errors.Is(err, worker.ErrDefinitionConflict) {
			t.Fatalf("a refusing worker started over a different definition: %v", err)
		}

		logs := &redistest.LogBuffer{}
		w, err := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Logger: slog.New(slog.NewTextHandler(logs, nil)),
			LeaseDuration: 2 * time.Second, FetchBlock: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		w.HandleJSON(v2, echo("notify"))
		if err := w.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
		if !strings.Contains(logs.String(), "replaced a different registered definition") {
			t.Fatalf("no warning about the replaced definition:\n%s", logs.String())
		}
		ev, err = ing.Push(ctx, "user.updated", json.RawMessage(`{"id":"u-1"}`), nil)
		if err != nil || ev.Runs[0].IdempotencyKey != "v2:u-1" || ev.Runs[0].Outcome != events.OutcomeCreated {
			t.Fatalf("after the replacement: %+v, %v", ev, err)
		}
	})
}

// In a namespace of several partitions an event's subscribed tasks get
// their runs in their keys' partitions, each once: a second push of the
// same event is deduplicated to every one of them, and the stored event
// says so.
func TestEventFansOutAcrossPartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		const parts = 4
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet, Partitions: parts})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		on := []string{"order.paid"}
		var defs []*task.Definition
		for i := range 6 {
			defs = append(defs, def(t, fmt.Sprintf("t%d", i), task.Options{
				Idempotency: task.TTL(fmt.Sprintf(`"t%d:" + input.id`, i), time.Minute), OnEvents: on,
			}))
		}
		startWorker(t, b, defs...)
		ing := newIngester(t, c, events.Options{})
		payload := json.RawMessage(`{"id":"o-1"}`)
		first, err := ing.Push(ctx, "order.paid", payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := ing.Push(ctx, "order.paid", payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Runs) != len(defs) || len(second.Runs) != len(defs) {
			t.Fatalf("runs: first %+v, second %+v", first.Runs, second.Runs)
		}
		used := map[int]bool{}
		for k, r := range first.Runs {
			if r.Outcome != events.OutcomeCreated {
				t.Fatalf("first push, task %s: %+v", r.Task, r)
			}
			part, ok := engine.RunPartition(r.RunID)
			if want := engine.KeyPartition(b.Namespace, r.IdempotencyKey, parts); !ok || part != want {
				t.Fatalf("run %s of key %q in partition %d, want %d", r.RunID, r.IdempotencyKey, part, want)
			}
			used[part] = true
			if d := second.Runs[k]; d.Outcome != events.OutcomeDeduplicated || d.RunID != r.RunID {
				t.Fatalf("second push, task %s: %+v, want deduplicated to %s", d.Task, d, r.RunID)
			}
		}
		if len(used) < 2 {
			t.Fatalf("every run in one partition (%v): the test shows nothing", used)
		}
		if n := countRuns(t, c); n != len(defs) {
			t.Fatalf("%d runs, want %d", n, len(defs))
		}
		for _, ev := range []*client.EventInfo{first, second} {
			got, err := c.Inspector().GetEvent(ctx, ev.ID)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Runs) != fmt.Sprint(ev.Runs) {
				t.Fatalf("stored event %+v differs from pushed %+v", got.Runs, ev.Runs)
			}
		}
		for _, r := range first.Runs {
			if res := waitResult(t, c, r.RunID); !strings.Contains(string(res), `"task":"`+r.Task+`"`) {
				t.Fatalf("run %s result = %s", r.RunID, res)
			}
		}
	})
}

// listOpts select events for listEvents.
type listOpts struct {
	Key           string
	Limit, Offset int
}

// listEvents lists events newest first through the Inspector, skipping
// Offset of them.
func listEvents(ctx context.Context, c *client.Client, o listOpts) ([]*client.EventInfo, error) {
	if o.Limit == 0 {
		o.Limit = events.ListLimitDefault
	}
	page, err := c.Inspector().ListEvents(ctx, client.ListOptions{Key: o.Key, Limit: o.Limit + o.Offset})
	if err != nil {
		return nil, err
	}
	if o.Offset >= len(page.Items) {
		return nil, nil
	}
	return page.Items[o.Offset:], nil
}
