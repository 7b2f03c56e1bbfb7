package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// taskRuns returns the "runs" of an event answer by task name.
func taskRuns(t *testing.T, r response) map[string]map[string]any {
	t.Helper()
	list, ok := r.body["runs"].([]any)
	if !ok {
		t.Fatalf("answer has no runs: %s", r.raw)
	}
	out := map[string]map[string]any{}
	for _, x := range list {
		m := x.(map[string]any)
		out[m["task"].(string)] = m
	}
	return out
}

// Issue test 1: the same event pushed twice inside the TTL gives one run;
// both events are stored, and the second lists the run it was deduplicated
// to.
func TestEventPushedTwiceGivesOneRun(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, be *redistest.Backend) {
		e := newEnv(t, be, envOptions{})
		e.startWorker(echo, mustDef(t, "send-receipt", task.Options{
			Idempotency: task.TTL(`"receipt:" + input.orderId`, time.Minute), OnEvents: []string{"order.paid"},
		}))
		ev := map[string]any{"key": "order.paid", "payload": map[string]any{"orderId": "o-1"}}
		first := e.call("POST", "/api/v1/events", ev).expect(t, http.StatusAccepted)
		second := e.call("POST", "/api/v1/events", ev).expect(t, http.StatusAccepted)
		created := taskRuns(t, first)["send-receipt"]
		dedup := taskRuns(t, second)["send-receipt"]
		if created["outcome"] != "created" || created["runId"] == "" || created["idempotencyKey"] != "receipt:o-1" {
			t.Fatalf("first event: %s", first.raw)
		}
		if dedup["outcome"] != "deduplicated" || dedup["runId"] != created["runId"] {
			t.Fatalf("second event: %s, want deduplicated to %v", second.raw, created["runId"])
		}
		if first.str("id") == "" || first.str("id") == second.str("id") {
			t.Fatalf("event IDs %q and %q", first.str("id"), second.str("id"))
		}
		if n := e.runCount(); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
		for _, r := range []response{first, second} {
			stored := e.call("GET", "/api/v1/events/"+r.str("id"), nil).expect(t, http.StatusOK)
			if got := taskRuns(t, stored)["send-receipt"]; got["runId"] != created["runId"] || got["outcome"] != taskRuns(t, r)["send-receipt"]["outcome"] {
				t.Fatalf("stored event %s differs from the push answer %s", stored.raw, r.raw)
			}
			if p, _ := json.Marshal(stored.body["payload"]); string(p) != `{"orderId":"o-1"}` {
				t.Fatalf("stored payload = %s", p)
			}
		}
		res := e.result(created["runId"].(string))
		if res.str("status") != "succeeded" {
			t.Fatalf("run result: %s", res.raw)
		}
	})
}

// Issue test 2: two tasks on one event key whose expressions yield the same
// key get one run in total (keys are namespace-wide); with prefixed
// expressions, one run each.
func TestTwoTasksOnOneEvent(t *testing.T) {
	t.Parallel()
	on := []string{"user.signed-up"}
	t.Run("same key", func(t *testing.T) {
		e := newEnv(t, redistest.Real(t), envOptions{})
		e.startWorker(echo,
			mustDef(t, "welcome-mail", task.Options{Idempotency: task.TTL(`input.userId`, time.Minute), OnEvents: on}),
			mustDef(t, "crm-sync", task.Options{Idempotency: task.TTL(`input.userId`, time.Minute), OnEvents: on}))
		r := e.call("POST", "/api/v1/events", map[string]any{"key": "user.signed-up", "payload": map[string]any{"userId": "u-1"}}).
			expect(t, http.StatusAccepted)
		runs := taskRuns(t, r)
		if runs["crm-sync"]["outcome"] != "created" || runs["welcome-mail"]["outcome"] != "deduplicated" ||
			runs["welcome-mail"]["runId"] != runs["crm-sync"]["runId"] {
			t.Fatalf("runs: %s", r.raw)
		}
		if n := e.runCount(); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
	})
	t.Run("prefixed keys", func(t *testing.T) {
		e := newEnv(t, redistest.Real(t), envOptions{})
		e.startWorker(echo,
			mustDef(t, "welcome-mail", task.Options{Idempotency: task.TTL(`"welcome:" + input.userId`, time.Minute), OnEvents: on}),
			mustDef(t, "crm-sync", task.Options{Idempotency: task.TTL(`"crm:" + input.userId`, time.Minute), OnEvents: on}))
		r := e.call("POST", "/api/v1/events", map[string]any{"key": "user.signed-up", "payload": map[string]any{"userId": "u-1"}}).
			expect(t, http.StatusAccepted)
		runs := taskRuns(t, r)
		for _, name := range []string{"welcome-mail", "crm-sync"} {
			if runs[name]["outcome"] != "created" {
				t.Fatalf("%s: %s", name, r.raw)
			}
			if res := e.result(runs[name]["runId"].(string)); res.str("status") != "succeeded" {
				t.Fatalf("%s result: %s", name, res.raw)
			}
		}
		if n := e.runCount(); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
	})
}

// Issue test 3: an HTTP trigger that collides gets 409 with the existing
// run's ID; that run's result, fetched by ID, is what the first caller
// gets.
func TestHTTPTriggerCollision(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, be *redistest.Backend) {
		e := newEnv(t, be, envOptions{})
		e.startWorker(echo, mustDef(t, "charge", task.Options{Idempotency: task.TTL(`"charge:" + input.orderId`, time.Minute)}))
		body := map[string]any{"input": map[string]any{"orderId": "o-9"}, "additionalMetadata": map[string]any{"tenant": "acme"}}
		first := e.call("POST", "/api/v1/tasks/charge/runs", body).expect(t, http.StatusCreated)
		runID := first.str("runId")
		if runID == "" || first.str("outcome") != "created" {
			t.Fatalf("first trigger: %s", first.raw)
		}
		second := e.call("POST", "/api/v1/tasks/charge/runs", body).expect(t, http.StatusConflict)
		if second.str("error") != CodeIdempotencyCollision || second.str("existingRunId") != runID || second.str("idempotencyKey") != "charge:o-9" || second.str("existingStatus") == "" {
			t.Fatalf("collision answer: %s", second.raw)
		}
		mine := e.result(runID)
		theirs := e.result(second.str("existingRunId"))
		a, _ := json.Marshal(mine.body["result"])
		b, _ := json.Marshal(theirs.body["result"])
		if string(a) != string(b) || mine.str("status") != "succeeded" || string(a) == "null" {
			t.Fatalf("results differ: first caller %s, colliding caller %s", mine.raw, theirs.raw)
		}
		run := e.call("GET", "/api/v1/runs/"+runID, nil).expect(t, http.StatusOK)
		if run.str("idempotencyKey") != "charge:o-9" || run.str("status") != "succeeded" || run.body["attempt"] != float64(1) {
			t.Fatalf("run: %s", run.raw)
		}
		key := e.call("GET", "/api/v1/keys/charge:o-9", nil).expect(t, http.StatusOK)
		if key.str("runId") != runID || key.str("task") != "charge" || key.str("strategy") != "ttl" || key.body["ttlMs"].(float64) <= 0 {
			t.Fatalf("key: %s", key.raw)
		}
	})
}

// Issue test 6: a Go client trigger and an HTTP trigger of the same key
// collide with each other, whichever comes first.
func TestGoClientAndHTTPTriggersCollide(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, be *redistest.Backend) {
		e := newEnv(t, be, envOptions{})
		charge := task.Must[map[string]string, map[string]any]("charge", task.Options{Idempotency: task.Status(`"charge:" + input.orderId`, time.Minute)})
		e.register(taskdef.Spec(charge.Definition()))
		ctx := context.Background()

		ref, err := client.RunNoWait(ctx, e.c, charge, map[string]string{"orderId": "go-first"})
		if err != nil {
			t.Fatal(err)
		}
		r := e.call("POST", "/api/v1/tasks/charge/runs", map[string]any{"input": map[string]any{"orderId": "go-first"}}).
			expect(t, http.StatusConflict)
		if r.str("existingRunId") != ref.ID() {
			t.Fatalf("HTTP trigger after Go: %s, want existing run %s", r.raw, ref.ID())
		}

		created := e.call("POST", "/api/v1/tasks/charge/runs", map[string]any{"input": map[string]any{"orderId": "http-first"}}).
			expect(t, http.StatusCreated)
		_, err = client.RunNoWait(ctx, e.c, charge, map[string]string{"orderId": "http-first"})
		var coll *client.IdempotencyCollisionError
		if !errors.As(err, &coll) || coll.ExistingRunID != created.str("runId") || coll.Key != "charge:http-first" {
			t.Fatalf("Go trigger after HTTP: %v, want a collision with %s", err, created.str("runId"))
		}
		if n := e.runCount(); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
	})
}

// A bulk trigger answers per run, in order, with the status each would
// have had alone; duplicates inside the batch collide with the first.
func TestBulkTrigger(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		held := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated)
		r := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"runs": []any{
			map[string]any{"input": map[string]any{"id": "1"}},
			map[string]any{"input": map[string]any{"id": "2"}},
			map[string]any{"input": map[string]any{"id": "2"}, "additionalMetadata": map[string]any{"try": 2}},
		}}).expect(t, http.StatusOK)
		runs := r.body["runs"].([]any)
		got := func(i int) map[string]any { return runs[i].(map[string]any) }
		if len(runs) != 3 || got(0)["status"] != float64(409) || got(0)["existingRunId"] != held.str("runId") ||
			got(1)["status"] != float64(201) || got(1)["runId"] == "" ||
			got(2)["status"] != float64(409) || got(2)["existingRunId"] != got(1)["runId"] || got(2)["error"] != CodeIdempotencyCollision {
			t.Fatalf("bulk answer: %s", r.raw)
		}
		if n := e.runCount(); n != 2 {
			t.Fatalf("%d runs, want 2", n)
		}
	})
}

// Cancel stops a queued run; its result is then the cancellation. A
// long-poll on a run that does not end answers 202 with its state.
func TestCancelAndPendingResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "slow", Expression: `input.id`, Strategy: task.StrategyStatus, FallbackTTLMs: 60000})
		id := e.call("POST", "/api/v1/tasks/slow/runs", map[string]any{"input": map[string]any{"id": "x"}}).expect(t, http.StatusCreated).str("runId")
		pending := e.call("GET", "/api/v1/runs/"+id+"/result?wait=50ms", nil).expect(t, http.StatusAccepted)
		if pending.str("status") != "queued" {
			t.Fatalf("pending: %s", pending.raw)
		}
		e.call("GET", "/api/v1/runs/"+id+"/result", nil).expect(t, http.StatusAccepted)
		c := e.call("POST", "/api/v1/runs/"+id+"/cancel", nil).expect(t, http.StatusOK)
		if c.str("runId") != id || c.str("status") != "cancelled" || c.body["cancelled"] != true {
			t.Fatalf("cancel: %s", c.raw)
		}
		// A second cancel changes nothing and says so.
		again := e.call("POST", "/api/v1/runs/"+id+"/cancel", nil).expect(t, http.StatusOK)
		if again.str("status") != "cancelled" || again.body["cancelled"] != false {
			t.Fatalf("second cancel: %s", again.raw)
		}
		done := e.call("GET", "/api/v1/runs/"+id+"/result?wait=1s", nil).expect(t, http.StatusOK)
		if done.str("status") != "cancelled" || done.str("error") == "" {
			t.Fatalf("result after cancel: %s", done.raw)
		}
		// The status strategy released the key with the cancellation.
		e.call("GET", "/api/v1/keys/x", nil).expect(t, http.StatusNotFound)
		e.call("POST", "/api/v1/runs/no-such-run/cancel", nil).expect(t, http.StatusNotFound)
	})
}

func TestListTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.call("GET", "/api/v1/tasks", nil).expect(t, http.StatusOK)
	e.register(task.Spec{Name: "a", OnEvents: []string{"x"}})
	r := e.call("GET", "/api/v1/tasks", nil).expect(t, http.StatusOK)
	list := r.body["tasks"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["spec"].(map[string]any)["name"] != "a" {
		t.Fatalf("tasks: %s", r.raw)
	}
}

// A batch of events answers one result per event, in order; a later event
// of the batch is deduplicated to the run an earlier one created.
func TestEventBatch(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "index", Expression: `"doc:" + input.doc`, Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"doc.changed"}})
		r := e.call("POST", "/api/v1/events", map[string]any{"events": []any{
			map[string]any{"key": "doc.changed", "payload": map[string]any{"doc": "a"}},
			map[string]any{"key": "doc.changed", "payload": map[string]any{"doc": "a"}, "metadata": map[string]any{"by": "bob"}},
			map[string]any{"key": "unrelated"},
		}}).expect(t, http.StatusAccepted)
		evs := r.body["events"].([]any)
		run := func(i int) map[string]any {
			runs := evs[i].(map[string]any)["runs"].([]any)
			if len(runs) == 0 {
				return nil
			}
			return runs[0].(map[string]any)
		}
		if len(evs) != 3 || run(0)["outcome"] != "created" || run(1)["outcome"] != "deduplicated" ||
			run(1)["runId"] != run(0)["runId"] || run(2) != nil {
			t.Fatalf("batch answer: %s", r.raw)
		}
	})
}

// A null payload or metadata is an absent one: the event is stored with {}
// and the expression sees an empty object, single or in a batch.
func TestEventNullFieldsAreEmptyObjects(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "nulls", Expression: `"nulls:" + string(size(input)) + ":" + string(size(additional_metadata))`,
			Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"n.seen"}})
		one := e.call("POST", "/api/v1/events", `{"key": "n.seen", "payload": null, "metadata": null}`).expect(t, http.StatusAccepted)
		batch := e.call("POST", "/api/v1/events", `{"events": [{"key": "n.seen", "payload": null, "metadata": null}]}`).expect(t, http.StatusAccepted)
		ids := []string{one.str("id"), batch.body["events"].([]any)[0].(map[string]any)["id"].(string)}
		for _, id := range ids {
			stored := e.call("GET", "/api/v1/events/"+id, nil).expect(t, http.StatusOK)
			p, _ := json.Marshal(stored.body["payload"])
			m, _ := json.Marshal(stored.body["metadata"])
			run := taskRuns(t, stored)["nulls"]
			if string(p) != "{}" || string(m) != "{}" || run["idempotencyKey"] != "nulls:0:0" {
				t.Fatalf("event %s stored as %s", id, stored.raw)
			}
		}
	})
}

// An expression that fails on the input answers 422 saying how it failed
// (kind) and which input field it could not read, as the command line's
// JSON does.
func TestKeyErrorSaysWhatFailed(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, be *redistest.Backend) {
		e := newEnv(t, be, envOptions{})
		e.register(task.Spec{Name: "charge", Expression: `"charge:" + input.orderId`, Strategy: task.StrategyTTL, TTLMs: 60000})
		e.register(task.Spec{Name: "count", Expression: `input.n`, Strategy: task.StrategyTTL, TTLMs: 60000})
		missing := e.call("POST", "/api/v1/tasks/charge/runs", map[string]any{"input": map[string]any{"order": "1"}}).expect(t, http.StatusUnprocessableEntity)
		if missing.str("error") != CodeIdempotencyKeyError || missing.str("kind") != "eval" || missing.str("field") != "input.orderId" {
			t.Errorf("missing field: %s", missing.raw)
		}
		number := e.call("POST", "/api/v1/tasks/count/runs", map[string]any{"input": map[string]any{"n": 1}}).expect(t, http.StatusUnprocessableEntity)
		if number.str("kind") != "result_type" || number.str("field") != "" {
			t.Errorf("a number for a key: %s", number.raw)
		}
		// A concurrency expression that fails says it was that one.
		e.register(task.Spec{Name: "grouped", Concurrency: []task.Concurrency{{Expression: `input.tenant`, MaxRuns: 1}}})
		group := e.call("POST", "/api/v1/tasks/grouped/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusUnprocessableEntity)
		if group.str("error") != CodeIdempotencyKeyError || group.str("kind") != "eval" || group.str("field") != "input.tenant" ||
			!strings.HasPrefix(group.str("message"), `a concurrency expression of the task cannot be evaluated on this input: task "grouped": concurrency group "input.tenant": `) {
			t.Errorf("no concurrency group: %s", group.raw)
		}
		// Units computed from the input, over the limit: out of range,
		// naming the limit, the expression and the value.
		e.register(task.Spec{Name: "exports", RateLimits: []task.RateLimitSpec{{Name: "exports", Limit: 5, PeriodUs: 1e6, UnitsExpression: "input.rows"}}})
		units := e.call("POST", "/api/v1/tasks/exports/runs", map[string]any{"input": map[string]any{"rows": 6}}).expect(t, http.StatusUnprocessableEntity)
		if units.str("error") != CodeIdempotencyKeyError || units.str("kind") != "out_of_range" ||
			!strings.Contains(units.str("message"), `a rate limit's units expression cannot be evaluated on this input: task "exports": rate limit "exports" units "input.rows": value out of range: 6 is outside [1, limit 5]`) {
			t.Errorf("units over the limit: %s", units.raw)
		}
	})
}

// A run's body lists its concurrency groups, one per limit of its task as
// registered, in order.
func TestRunShowsEachConcurrencyGroup(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, be *redistest.Backend) {
		e := newEnv(t, be, envOptions{})
		e.register(task.Spec{Name: "placed", Concurrency: []task.Concurrency{
			{Expression: `"tenant:" + input.tenant`, MaxRuns: 2, Strategy: task.GroupRoundRobin},
			{Expression: `"region:" + input.region`, MaxRuns: 5, Strategy: task.CancelNewest},
		}})
		created := e.call("POST", "/api/v1/tasks/placed/runs", map[string]any{"input": map[string]any{"tenant": "acme", "region": "eu"}}).expect(t, http.StatusCreated)
		run := e.call("GET", "/api/v1/runs/"+created.str("runId"), nil).expect(t, http.StatusOK)
		if gs, _ := run.body["concurrencyGroups"].([]any); len(gs) != 2 || gs[0] != "tenant:acme" || gs[1] != "region:eu" {
			t.Fatalf("run: %s; want concurrencyGroups [tenant:acme region:eu]", run.raw)
		}
	})
}
