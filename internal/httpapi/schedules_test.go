package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// The schedules' routes: create (400 naming the field, 409 for a name
// taken), list, get, put (keeping the paused state), pause, resume,
// trigger (a run under the schedule's key for now) and delete (404
// after), every answer checked against api/openapi.yaml.
func TestScheduleRoutes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "report"})
		body := map[string]any{"name": "nightly", "task": "report", "cron": "0 2 * * *", "timezone": "Europe/Paris",
			"input": map[string]any{"region": "eu"}, "misfire": map[string]any{"policy": "catch_up", "max": 3}}
		r := e.call("POST", "/api/v1/schedules", body).expect(t, http.StatusCreated)
		if r.str("name") != "nightly" || r.str("keyExpression") != task.ScheduleKeyDefault || r.str("nextAt") == "" || r.body["paused"] != false {
			t.Fatalf("created: %s", r.raw)
		}
		if r := e.call("POST", "/api/v1/schedules", body).expect(t, http.StatusConflict); r.str("error") != CodeScheduleExists {
			t.Fatalf("second create: %s", r.raw)
		}
		for field, bad := range map[string]map[string]any{
			"cron":           {"name": "b", "task": "report", "cron": "0 2 * *"},
			"timezone":       {"name": "b", "task": "report", "cron": "@daily", "timezone": "Nowhere/City"},
			"key_expression": {"name": "b", "task": "report", "cron": "@daily", "keyExpression": "schedule.name +"},
			"misfire":        {"name": "b", "task": "report", "cron": "@daily", "misfire": map[string]any{"policy": "never"}},
		} {
			r := e.call("POST", "/api/v1/schedules", bad).expect(t, http.StatusBadRequest)
			if r.str("error") != CodeInvalidField || r.str("field") != field {
				t.Errorf("bad %s: %s", field, r.raw)
			}
		}
		e.call("POST", "/api/v1/schedules/nightly/pause", nil).expect(t, http.StatusOK)
		body["cron"] = "0 3 * * *"
		r = e.call("PUT", "/api/v1/schedules/nightly", body).expect(t, http.StatusOK)
		if r.str("cron") != "0 3 * * *" || r.body["paused"] != true {
			t.Fatalf("put over a paused schedule: %s", r.raw)
		}
		if r := e.call("PUT", "/api/v1/schedules/other", body).expect(t, http.StatusBadRequest); r.str("field") != "name" {
			t.Fatalf("put with another name: %s", r.raw)
		}
		r = e.call("POST", "/api/v1/schedules/nightly/resume", nil).expect(t, http.StatusOK)
		if r.body["paused"] != false {
			t.Fatalf("resumed: %s", r.raw)
		}
		r = e.call("GET", "/api/v1/schedules", nil).expect(t, http.StatusOK)
		if list := r.body["schedules"].([]any); len(list) != 1 {
			t.Fatalf("list: %s", r.raw)
		}
		r = e.call("POST", "/api/v1/schedules/nightly/trigger", nil).expect(t, http.StatusCreated)
		if r.str("runId") == "" || !strings.HasPrefix(r.str("idempotencyKey"), "nightly@") || r.str("task") != "report" {
			t.Fatalf("trigger: %s", r.raw)
		}
		e.call("GET", "/api/v1/runs/"+r.str("runId"), nil).expect(t, http.StatusOK)
		e.call("DELETE", "/api/v1/schedules/nightly", nil).expect(t, http.StatusOK)
		for _, c := range [][2]string{{"GET", ""}, {"DELETE", ""}, {"POST", "/pause"}, {"POST", "/resume"}, {"POST", "/trigger"}} {
			if r := e.call(c[0], "/api/v1/schedules/nightly"+c[1], nil).expect(t, http.StatusNotFound); r.str("error") != CodeScheduleNotFound {
				t.Errorf("%s %s after delete: %s", c[0], c[1], r.raw)
			}
		}
	})
}
