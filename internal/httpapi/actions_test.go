package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// POST /api/v1/runs/{id}/retry creates a linked run for a cancelled run
// whose key is free, answers a duplicate naming the owner when it is held,
// and refuses a run that has not ended with a clear 409.
func TestRetryRunOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "pay", Expression: `"pay:" + input.id`, Strategy: task.StrategyStatus, FallbackTTLMs: 60000})
		id := e.call("POST", "/api/v1/tasks/pay/runs", map[string]any{"input": map[string]any{"id": "1"}, "additionalMetadata": map[string]any{"src": "web"}}).
			expect(t, http.StatusCreated).str("runId")

		r := e.call("POST", "/api/v1/runs/"+id+"/retry", nil).expect(t, http.StatusConflict)
		if r.str("error") != CodeRunNotRetryable || !strings.Contains(r.str("message"), "is queued: only a failed or cancelled run can be retried") {
			t.Fatalf("retry of a queued run: %s", r.raw)
		}
		e.call("POST", "/api/v1/runs/"+id+"/cancel", nil).expect(t, http.StatusOK)
		r = e.call("POST", "/api/v1/runs/"+id+"/retry", nil).expect(t, http.StatusCreated)
		retry := r.str("runId")
		if retry == id || r.str("retryOf") != id || r.str("outcome") != "created" || r.str("idempotencyKey") != "pay:1" {
			t.Fatalf("retry answer: %s", r.raw)
		}
		got := e.call("GET", "/api/v1/runs/"+retry, nil).expect(t, http.StatusOK)
		if got.str("retryOf") != id || got.str("status") != "queued" || got.body["additionalMetadata"].(map[string]any)["src"] != "web" {
			t.Fatalf("the retry: %s", got.raw)
		}
		if orig := e.call("GET", "/api/v1/runs/"+id, nil).expect(t, http.StatusOK); orig.str("retriedBy") != retry {
			t.Fatalf("the original: %s", orig.raw)
		}
		r = e.call("POST", "/api/v1/runs/"+id+"/retry", nil).expect(t, http.StatusConflict)
		if r.str("error") != CodeRunNotRetryable || r.str("existingRunId") != retry {
			t.Fatalf("a second retry: %s", r.raw)
		}

		// The retry holds pay:1; a cancelled run of the same key retried
		// now is a duplicate of it.
		e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		held := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated).str("runId")
		e.call("POST", "/api/v1/runs/"+held+"/cancel", nil).expect(t, http.StatusOK)
		r = e.call("POST", "/api/v1/runs/"+held+"/retry", nil).expect(t, http.StatusConflict)
		if r.str("error") != CodeIdempotencyCollision || r.str("existingRunId") != held || r.str("idempotencyKey") != "ship:1" {
			t.Fatalf("retry under a held key: %s", r.raw)
		}
		e.call("POST", "/api/v1/runs/no-such-run/retry", nil).expect(t, http.StatusNotFound)
	})
}

// DELETE /api/v1/keys/{key} releases a key, fenced by ?owner= when given.
func TestReleaseKeyOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "hook", Expression: `"webhook:" + input.url`, Strategy: task.StrategyTTL, TTLMs: 60000})
		key := "webhook:https://shop.example/evt/1"
		owner := e.call("POST", "/api/v1/tasks/hook/runs", map[string]any{"input": map[string]any{"url": "https://shop.example/evt/1"}}).expect(t, http.StatusCreated).str("runId")
		r := e.call("DELETE", "/api/v1/keys/"+key+"?owner=someone-else", nil).expect(t, http.StatusConflict)
		if r.str("error") != CodeKeyOwnerChanged || r.str("existingRunId") != owner || r.str("idempotencyKey") != key {
			t.Fatalf("a release fenced by another owner: %s", r.raw)
		}
		e.call("GET", "/api/v1/keys/"+key, nil).expect(t, http.StatusOK)
		r = e.call("DELETE", "/api/v1/keys/"+url.PathEscape(key)+"?owner="+owner, nil).expect(t, http.StatusOK)
		if r.str("key") != key || r.str("runId") != owner || r.body["released"] != true {
			t.Fatalf("release: %s", r.raw)
		}
		e.call("GET", "/api/v1/keys/"+key, nil).expect(t, http.StatusNotFound)
		if r := e.call("DELETE", "/api/v1/keys/"+key, nil).expect(t, http.StatusNotFound); r.str("error") != CodeKeyNotFound {
			t.Fatalf("release of a free key: %s", r.raw)
		}
		// Freed: the same trigger creates a run again; unfenced release.
		again := e.call("POST", "/api/v1/tasks/hook/runs", map[string]any{"input": map[string]any{"url": "https://shop.example/evt/1"}}).expect(t, http.StatusCreated).str("runId")
		if r := e.call("DELETE", "/api/v1/keys/"+key, nil).expect(t, http.StatusOK); r.str("runId") != again {
			t.Fatalf("unfenced release: %s, want released from %s", r.raw, again)
		}
		e.call("DELETE", "/api/v1/keys/"+key+"?ownr=x", nil).expect(t, http.StatusBadRequest)
	})
}

// POST /api/v1/events/{id}/replay pushes an event again: deduplicated
// while its runs hold their keys, new runs once they are released.
func TestReplayEventOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "index", Expression: `"doc:" + input.doc`, Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"doc.changed"}})
		ev := e.call("POST", "/api/v1/events", map[string]any{"key": "doc.changed", "payload": map[string]any{"doc": "a"}, "metadata": map[string]any{"m": "1"}}).
			expect(t, http.StatusAccepted)
		first := ev.body["runs"].([]any)[0].(map[string]any)["runId"].(string)
		r := e.call("POST", "/api/v1/events/"+ev.str("id")+"/replay", nil).expect(t, http.StatusAccepted)
		run := r.body["runs"].([]any)[0].(map[string]any)
		if r.str("replayOf") != ev.str("id") || r.str("id") == ev.str("id") || run["outcome"] != "deduplicated" || run["runId"] != first {
			t.Fatalf("replay while the key is held: %s", r.raw)
		}
		e.call("DELETE", "/api/v1/keys/doc:a", nil).expect(t, http.StatusOK)
		r = e.call("POST", "/api/v1/events/"+ev.str("id")+"/replay", nil).expect(t, http.StatusAccepted)
		run = r.body["runs"].([]any)[0].(map[string]any)
		if run["outcome"] != "created" || run["runId"] == first {
			t.Fatalf("replay once the key is free: %s", r.raw)
		}
		got := e.call("GET", "/api/v1/runs/"+run["runId"].(string), nil).expect(t, http.StatusOK)
		if got.body["additionalMetadata"].(map[string]any)["m"] != "1" {
			t.Fatalf("the replay's run lost the metadata: %s", got.raw)
		}
		e.call("POST", "/api/v1/events/no-such-event/replay", nil).expect(t, http.StatusNotFound)
	})
}

// Bulk cancel and retry by filter: a dry run counts, a cap refuses naming
// both numbers, and the action applies to the runs it can act on.
func TestBulkCancelAndRetryOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		ids := e.orders(6) // customer 42 for even, metadata source web for 0..2
		filter := map[string]any{"task": "orders", "where": []string{"input.customer=42"}}
		r := e.call("POST", "/api/v1/runs/cancel", map[string]any{"filter": filter, "dryRun": true}).expect(t, http.StatusOK)
		if r.body["matched"] != 3.0 || r.body["done"] != 0.0 || len(r.body["runs"].([]any)) != 0 {
			t.Fatalf("dry run: %s", r.raw)
		}
		r = e.call("POST", "/api/v1/runs/cancel", map[string]any{"filter": filter, "max": 2}).expect(t, http.StatusConflict)
		if r.str("error") != CodeTooManyRuns || !strings.Contains(r.str("message"), "3 runs match, more than the max of 2") {
			t.Fatalf("over the cap: %s", r.raw)
		}
		if got := e.pageAll("/api/v1/runs?status=cancelled", "runs", "id"); len(got) != 0 {
			t.Fatalf("a refused bulk cancel cancelled %v", got)
		}
		r = e.call("POST", "/api/v1/runs/cancel", map[string]any{"filter": filter}).expect(t, http.StatusOK)
		if r.body["matched"] != 3.0 || r.body["done"] != 3.0 {
			t.Fatalf("cancel: %s", r.raw)
		}
		cancelled := e.pageAll("/api/v1/runs?status=cancelled", "runs", "id")
		if want := []string{ids[1], ids[3], ids[5]}; strings.Join(cancelled, ",") != strings.Join(want, ",") {
			t.Fatalf("cancelled %v, want %v", cancelled, want)
		}
		// The ttl keys are still held: each retry is a duplicate.
		r = e.call("POST", "/api/v1/runs/retry", map[string]any{"filter": map[string]any{"status": "cancelled"}}).expect(t, http.StatusOK)
		if r.body["matched"] != 3.0 || r.body["done"] != 0.0 {
			t.Fatalf("retry under held keys: %s", r.raw)
		}
		for _, item := range r.body["runs"].([]any) {
			if msg, _ := item.(map[string]any)["error"].(string); !strings.Contains(msg, "idempotency collision") {
				t.Fatalf("a retry under a held key: %v", item)
			}
		}
		for _, k := range []string{"order:0", "order:2"} {
			e.call("DELETE", "/api/v1/keys/"+k, nil).expect(t, http.StatusOK)
		}
		r = e.call("POST", "/api/v1/runs/retry", map[string]any{"filter": map[string]any{"status": "cancelled"}}).expect(t, http.StatusOK)
		if r.body["done"] != 2.0 {
			t.Fatalf("retry with two keys freed: %s", r.raw)
		}

		for _, tc := range []struct {
			body  any
			field string
		}{
			{map[string]any{"max": 1001}, "max"},
			{map[string]any{"filter": map[string]any{"status": "done"}}, "filter.status"},
			{map[string]any{"filter": map[string]any{"since": "yesterday"}}, "filter.since"},
			{map[string]any{"filter": map[string]any{"where": []string{"x=1"}}}, "filter.where"},
			{map[string]any{"filter": map[string]any{"tsak": "orders"}}, ""},
		} {
			r := e.call("POST", "/api/v1/runs/cancel", tc.body).expect(t, http.StatusBadRequest)
			if r.str("error") != CodeInvalidField || tc.field != "" && r.str("field") != tc.field {
				t.Errorf("%v: %s, want invalid_field on %s", tc.body, r.raw, tc.field)
			}
		}
	})
}
