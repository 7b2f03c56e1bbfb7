package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// listedPaused reads GET /api/v1/tasks: the paused tasks' pausedAt, by
// name; every task listed must say paused true or false.
func listedPaused(t *testing.T, e *env) map[string]any {
	t.Helper()
	r := e.call("GET", "/api/v1/tasks", nil).expect(t, http.StatusOK)
	out := map[string]any{}
	for _, x := range r.body["tasks"].([]any) {
		tk := x.(map[string]any)
		name := tk["spec"].(map[string]any)["name"].(string)
		switch tk["paused"] {
		case true:
			out[name] = tk["pausedAt"]
		case false:
		default:
			t.Fatalf("task %s says paused %v", name, tk["paused"])
		}
	}
	return out
}

// Pause and resume a task: the answer says the state and whether it
// changed, the task listing names the paused task, /metrics has its gauge,
// an unregistered task is a 404 naming it, and triggers are still
// accepted while it is paused. Every answer is checked against
// api/openapi.yaml.
func TestPauseAndResumeTaskRoutes(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "emails"})
		e.register(task.Spec{Name: "reports"})
		r := e.call("POST", "/api/v1/tasks/emails/pause", nil).expect(t, http.StatusOK)
		if r.str("task") != "emails" || r.body["paused"] != true || r.body["changed"] != true || r.str("pausedAt") == "" {
			t.Fatalf("pause: %s", r.raw)
		}
		at := r.str("pausedAt")
		r = e.call("POST", "/api/v1/tasks/emails/pause", nil).expect(t, http.StatusOK)
		if r.body["paused"] != true || r.body["changed"] != false || r.str("pausedAt") != at {
			t.Fatalf("second pause: %s", r.raw)
		}
		if paused := listedPaused(t, e); len(paused) != 1 || paused["emails"] != at {
			t.Fatalf("listing's paused = %v", paused)
		}
		e.call("POST", "/api/v1/tasks/emails/runs", map[string]any{"input": map[string]any{"id": 1}}).expect(t, http.StatusCreated)
		m := e.call("GET", "/metrics", nil).expect(t, http.StatusOK)
		for _, want := range []string{`taskq_task_paused{task="emails"} 1`, `taskq_task_paused{task="reports"} 0`} {
			if !strings.Contains(string(m.raw), want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		r = e.call("POST", "/api/v1/tasks/emails/resume", nil).expect(t, http.StatusOK)
		if r.body["paused"] != false || r.body["changed"] != true {
			t.Fatalf("resume: %s", r.raw)
		}
		r = e.call("POST", "/api/v1/tasks/emails/resume", nil).expect(t, http.StatusOK)
		if r.body["changed"] != false {
			t.Fatalf("second resume: %s", r.raw)
		}
		if paused := listedPaused(t, e); len(paused) != 0 {
			t.Fatalf("paused after resume: %v", paused)
		}
		for _, verb := range []string{"pause", "resume"} {
			r := e.call("POST", "/api/v1/tasks/nosuch/"+verb, nil).expect(t, http.StatusNotFound)
			if r.str("error") != CodeTaskNotFound || !strings.Contains(r.str("message"), `"nosuch"`) {
				t.Errorf("%s of an unregistered task: %s", verb, r.raw)
			}
		}
	})
}
