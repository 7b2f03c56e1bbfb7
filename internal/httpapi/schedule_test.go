package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// POST /api/v1/tasks/{task}/runs with a priority gives the run that
// priority, shown by GET /api/v1/runs/{id}; without one the run has the
// task's.
func TestTriggerWithAPriorityOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "urgent", Priority: 2})
		for body, want := range map[string]float64{`{"input": {}, "priority": 3}`: 3, `{"input": {}}`: 2} {
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatal(err)
			}
			id := e.call("POST", "/api/v1/tasks/urgent/runs", m).expect(t, http.StatusCreated).str("runId")
			if run := e.call("GET", "/api/v1/runs/"+id, nil).expect(t, http.StatusOK); run.body["priority"] != want {
				t.Fatalf("run triggered with %s: %s, want priority %v", body, run.raw, want)
			}
		}
	})
}

// POST /api/v1/tasks/{task}/runs with runAt or runIn creates a run that
// waits, holding its key: a duplicate is a 409 naming it at once. Bad
// schedules are 400s naming the field, with nothing written.
func TestScheduledTriggerOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "remind", Expression: `"remind:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		at := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
		id := e.call("POST", "/api/v1/tasks/remind/runs", map[string]any{"input": map[string]any{"id": "1"}, "runAt": at.Format(time.RFC3339Nano)}).
			expect(t, http.StatusCreated).str("runId")
		run := e.call("GET", "/api/v1/runs/"+id, nil).expect(t, http.StatusOK)
		if run.str("status") != "queued" || run.body["scheduled"] != true || run.str("scheduledAt") == "" {
			t.Fatalf("the scheduled run: %s", run.raw)
		}
		if due, err := time.Parse(time.RFC3339Nano, run.str("scheduledAt")); err != nil || !due.Equal(at) {
			t.Fatalf("scheduledAt = %s, want %s", run.str("scheduledAt"), at)
		}
		r := e.call("POST", "/api/v1/tasks/remind/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusConflict)
		if r.str("error") != CodeIdempotencyCollision || r.str("existingRunId") != id {
			t.Fatalf("duplicate of a scheduled run: %s", r.raw)
		}
		// A batch with runIn schedules each of its runs.
		batch := e.call("POST", "/api/v1/tasks/remind/runs", map[string]any{"runs": []any{
			map[string]any{"input": map[string]any{"id": "2"}}, map[string]any{"input": map[string]any{"id": "3"}},
		}, "runIn": "30m"}).expect(t, http.StatusOK)
		for _, item := range batch.body["runs"].([]any) {
			rid := item.(map[string]any)["runId"].(string)
			if got := e.call("GET", "/api/v1/runs/"+rid, nil).expect(t, http.StatusOK); got.body["scheduled"] != true {
				t.Fatalf("a run of the scheduled batch: %s", got.raw)
			}
		}
		list := e.call("GET", "/api/v1/runs?scheduled=true", nil).expect(t, http.StatusOK)
		if n := len(list.body["runs"].([]any)); n != 3 {
			t.Fatalf("GET /api/v1/runs?scheduled=true lists %d runs, want the 3 scheduled: %s", n, list.raw)
		}
		e.call("GET", "/api/v1/runs?scheduled=maybe", nil).expect(t, http.StatusBadRequest)
		before := e.runCount()
		for _, tc := range []struct {
			body  map[string]any
			field string
			says  string
		}{
			{map[string]any{"runAt": "tomorrow"}, "runAt", "RFC 3339"},
			{map[string]any{"runIn": "soon"}, "runIn", "duration"},
			{map[string]any{"runIn": "-5s"}, "runIn", "must not be negative"},
			{map[string]any{"runIn": "100000h"}, "runIn", "over the limit"},
			{map[string]any{"runIn": "1h", "runAt": at.Format(time.RFC3339)}, "runAt", "given together with runIn"},
			{map[string]any{"runIn": "1h", "runs": []any{map[string]any{"input": map[string]any{"id": "9"}}}, "runAt": at.Format(time.RFC3339)}, "runAt", "given together with runIn"},
		} {
			tc.body["input"] = map[string]any{"id": "x"}
			if tc.body["runs"] != nil {
				delete(tc.body, "input")
			}
			r := e.call("POST", "/api/v1/tasks/remind/runs", tc.body).expect(t, http.StatusBadRequest)
			if r.str("error") != CodeInvalidField || r.str("field") != tc.field || !strings.Contains(r.str("message"), tc.says) {
				t.Errorf("%v: %s; want invalid_field on %s saying %q", tc.body, r.raw, tc.field, tc.says)
			}
		}
		if n := e.runCount(); n != before {
			t.Fatalf("refused triggers created %d runs", n-before)
		}
	})
}

// POST /api/v1/runs/{id}/reschedule moves a scheduled run and refuses one
// that is not waiting with a 409.
func TestRescheduleOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "remind", Expression: `"remind:" + input.id`, Strategy: task.StrategyStatus, FallbackTTLMs: 60000})
		id := e.call("POST", "/api/v1/tasks/remind/runs", map[string]any{"input": map[string]any{"id": "1"}, "runIn": "1h"}).
			expect(t, http.StatusCreated).str("runId")
		at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Millisecond)
		r := e.call("POST", "/api/v1/runs/"+id+"/reschedule", map[string]any{"runAt": at.Format(time.RFC3339Nano)}).expect(t, http.StatusOK)
		if due, err := time.Parse(time.RFC3339Nano, r.str("scheduledAt")); err != nil || !due.Equal(at) || r.body["scheduled"] != true {
			t.Fatalf("rescheduled later: %s; want due %s", r.raw, at)
		}
		r = e.call("POST", "/api/v1/runs/"+id+"/reschedule", map[string]any{"runIn": "5m"}).expect(t, http.StatusOK)
		if due, err := time.Parse(time.RFC3339Nano, r.str("scheduledAt")); err != nil || due.After(time.Now().Add(5*time.Minute)) {
			t.Fatalf("rescheduled earlier: %s", r.raw)
		}
		if r := e.call("POST", "/api/v1/runs/"+id+"/reschedule", map[string]any{}).expect(t, http.StatusBadRequest); r.str("field") != "runAt" {
			t.Fatalf("reschedule without a time: %s", r.raw)
		}
		if r := e.call("POST", "/api/v1/runs/"+id+"/reschedule", map[string]any{"runIn": "-1m"}).expect(t, http.StatusBadRequest); r.str("field") != "runIn" {
			t.Fatalf("reschedule to a negative delay: %s", r.raw)
		}
		now := e.call("POST", "/api/v1/tasks/remind/runs", map[string]any{"input": map[string]any{"id": "2"}}).expect(t, http.StatusCreated).str("runId")
		r = e.call("POST", "/api/v1/runs/"+now+"/reschedule", map[string]any{"runIn": "1h"}).expect(t, http.StatusConflict)
		if r.str("error") != CodeRunNotScheduled || !strings.Contains(r.str("message"), "queued") {
			t.Fatalf("reschedule of an unscheduled run: %s", r.raw)
		}
		e.call("POST", "/api/v1/runs/"+id+"/cancel", nil).expect(t, http.StatusOK)
		if r := e.call("POST", "/api/v1/runs/"+id+"/reschedule", map[string]any{"runIn": "1h"}).expect(t, http.StatusConflict); !strings.Contains(r.str("message"), "cancelled") {
			t.Fatalf("reschedule of a cancelled run: %s", r.raw)
		}
		e.call("POST", "/api/v1/runs/no-such-run/reschedule", map[string]any{"runIn": "1h"}).expect(t, http.StatusNotFound)
	})
}
