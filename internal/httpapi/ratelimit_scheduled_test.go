package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// A run a rate limit deferred waits with waiting and scheduledAt, but it is
// not a scheduled run: scheduled is false and ?scheduled=true leaves it
// out.
func TestARateLimitDeferralIsNotScheduled(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "mail", Expression: `"mail:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		id := e.call("POST", "/api/v1/tasks/mail/runs", map[string]any{"input": map[string]any{"id": "1"}}).
			expect(t, http.StatusCreated).str("runId")
		st := clientlink.Store(e.c)
		part, _ := engine.RunPartition(id)
		if err := st.EnsureGroup(t.Context(), "mail"); err != nil {
			t.Fatal(err)
		}
		ds, err := st.ReadGroup(t.Context(), part, "w", []string{"mail"}, 10, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("read = %v, %v", ds, err)
		}
		res, errs := st.DeferRuns(t.Context(), []engine.Deferral{{Delivery: ds[0], Due: time.Now().Add(time.Hour), Reason: `rate limit "emails" key "acme"`}})
		if errs[0] != nil || !res[0].Held {
			t.Fatalf("defer = %+v, %v", res, errs)
		}
		run := e.call("GET", "/api/v1/runs/"+id, nil).expect(t, http.StatusOK)
		if run.body["scheduled"] == true || run.str("waiting") != `rate limit "emails" key "acme"` || run.str("scheduledAt") == "" {
			t.Fatalf("the deferred run: %s", run.raw)
		}
		list := e.call("GET", "/api/v1/runs?scheduled=true", nil).expect(t, http.StatusOK)
		if n := len(list.body["runs"].([]any)); n != 0 {
			t.Fatalf("GET /api/v1/runs?scheduled=true lists %d runs, want none: %s", n, list.raw)
		}
	})
}
