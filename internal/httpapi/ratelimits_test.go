package httpapi

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// GET /api/v1/ratelimits lists the limits of the registered tasks with
// their use, and a run a limit holds back says so in its body (waiting).
func TestRateLimitsAndAWaitingRun(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "hourly", task.Options{RateLimits: []task.RateLimit{
			{Name: "reports", Limit: 1, Period: time.Hour},
			{Name: "per-tenant", Limit: 5, Period: time.Minute, Key: "input.tenant"},
		}})
		e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil }, def)
		input := map[string]any{"input": map[string]any{"tenant": "acme"}}
		first := e.call("POST", "/api/v1/tasks/hourly/runs", input).expect(t, http.StatusCreated).str("runId")
		second := e.call("POST", "/api/v1/tasks/hourly/runs", input).expect(t, http.StatusCreated).str("runId")
		// The runs may live in different partitions, read apart: either
		// may be the one let through.
		var held, done response
		waitFor(t, "one run held back and the other succeeded", func() bool {
			a := e.call("GET", "/api/v1/runs/"+first, nil).expect(t, http.StatusOK)
			b := e.call("GET", "/api/v1/runs/"+second, nil).expect(t, http.StatusOK)
			if a.body["waiting"] != nil {
				a, b = b, a
			}
			held, done = b, a
			return held.body["waiting"] != nil && done.str("status") == "succeeded"
		}, func() string { return string(held.raw) + " and " + string(done.raw) })
		if held.str("waiting") != `rate limit "reports"` || held.str("status") != "queued" || held.body["attempt"] != float64(0) {
			t.Fatalf("held run: %s", held.raw)
		}
		r := e.call("GET", "/api/v1/ratelimits?key=acme", nil).expect(t, http.StatusOK)
		ls := r.body["rateLimits"].([]any)
		if len(ls) != 2 {
			t.Fatalf("limits: %s", r.raw)
		}
		tenant, reports := ls[0].(map[string]any), ls[1].(map[string]any)
		if tenant["name"] != "per-tenant" || tenant["key"] != "acme" || tenant["used"] != float64(1) ||
			reports["name"] != "reports" || reports["used"] != float64(1) || reports["periodMs"] != float64(3600000) {
			t.Fatalf("limits for acme: %s", r.raw)
		}
		e.call("GET", "/api/v1/ratelimits?keys=acme", nil).expect(t, http.StatusBadRequest)
		// A trigger the keyed limit's expression fails on is refused, the
		// limit named, nothing created.
		bad := e.call("POST", "/api/v1/tasks/hourly/runs", map[string]any{"input": map[string]any{}}).
			expect(t, http.StatusUnprocessableEntity)
		if bad.str("error") != CodeIdempotencyKeyError ||
			!strings.HasPrefix(bad.str("message"), `a rate limit's key expression cannot be evaluated on this input: task "hourly": rate limit "per-tenant" key: `) {
			t.Fatalf("trigger without a tenant: %s", bad.raw)
		}
	})
}

// waitFor polls cond every 20ms for up to 10s; state, when set, says
// what there is instead.
func waitFor(t *testing.T, what string, cond func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	if state != nil {
		what += " (" + state() + ")"
	}
	t.Fatalf("timed out waiting for %s", what)
}
