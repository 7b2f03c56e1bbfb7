package httpapi

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// An HTTP trigger that collides is recorded with source http, and
// GET /api/v1/suppressed finds it by key and by owner, page by page.
func TestListSuppressed(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		r := e.call("GET", "/api/v1/suppressed", nil).expect(t, http.StatusOK)
		if string(r.raw) != `{"triggers":[]}`+"\n" {
			t.Fatalf("none: %s", r.raw)
		}
		owner := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "a/1"}}).expect(t, http.StatusCreated)
		for range 2 {
			e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "a/1"}}).expect(t, http.StatusConflict)
		}
		r = e.call("GET", "/api/v1/suppressed?key="+url.QueryEscape("ship:a/1")+"&limit=1", nil).expect(t, http.StatusOK)
		ts := r.body["triggers"].([]any)
		if len(ts) != 1 || r.str("nextCursor") == "" {
			t.Fatalf("first page: %s", r.raw)
		}
		got := ts[0].(map[string]any)
		if got["key"] != "ship:a/1" || got["ownerRunId"] != owner.str("runId") || got["task"] != "ship" ||
			got["source"] != "http" || got["outcome"] != "rejected" || len(got["inputDigest"].(string)) != 16 {
			t.Fatalf("record: %s", r.raw)
		}
		r = e.call("GET", "/api/v1/suppressed?owner="+owner.str("runId")+"&cursor="+url.QueryEscape(r.str("nextCursor")), nil).expect(t, http.StatusOK)
		if ts := r.body["triggers"].([]any); len(ts) != 1 || r.str("nextCursor") != "" {
			t.Fatalf("second page by owner: %s", r.raw)
		}
		if r := e.call("GET", "/api/v1/suppressed?key=ship:b", nil).expect(t, http.StatusOK); len(r.body["triggers"].([]any)) != 0 {
			t.Fatalf("another key: %s", r.raw)
		}
		for _, bad := range []string{"limit=0", "limit=x", "limit=1001", "cursor=nope"} {
			r := e.call("GET", "/api/v1/suppressed?"+bad, nil).expect(t, http.StatusBadRequest)
			if r.str("error") != CodeInvalidParameter {
				t.Errorf("%s: %s", bad, r.raw)
			}
		}
	})
}
