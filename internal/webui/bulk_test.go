package webui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

// Bulk actions from the runs page: the selected runs, or every run
// matching the search, cancelled or retried after a confirmation page that
// counts them by a dry run and changes nothing; the result page says what
// was done to each run. A read-only session gets no checkbox, no bulk
// button and no form, and its POST is refused.
func TestBulkActions(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, rb *redistest.Backend) {
		ctx := context.Background()
		e := newEnv(t, rb, envOptions{})
		a, b2, ended := e.trigger(ctx, order{ID: "bulk-a"}), e.trigger(ctx, order{ID: "bulk-b"}), e.trigger(ctx, order{ID: "bulk-c"})
		if _, err := e.c.Handle(ended).Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		admin := e.browser()
		admin.signIn(testToken)
		p := admin.get("/ui/runs")
		for _, want := range []string{`type="checkbox" name="run" value="` + a + `"`, `id="bulk-cancel-selected"`, `id="bulk-cancel-all"`} {
			if !strings.Contains(p.body, want) {
				t.Errorf("the runs page lacks %s", want)
			}
		}

		// The selected runs: one already ended is left alone.
		sel := url.Values{"action": {"cancel"}, "run": {a, b2, ended}}
		p = admin.get("/ui/runs/bulk?" + sel.Encode())
		if p.status != http.StatusOK || !strings.Contains(p.body, "Dry run: <strong>2</strong> runs would be cancelled; 1 selected run is left alone") ||
			!strings.Contains(p.body, `id="confirm"`) {
			t.Fatalf("selected confirmation: %d\n%s", p.status, p.body)
		}
		if r, _ := e.c.Inspector().GetRun(ctx, a); r.Status != client.StatusQueued {
			t.Fatalf("the confirmation page changed a run: %+v", r)
		}
		csrf := admin.csrf("/ui/runs/bulk?" + sel.Encode())
		form := url.Values{"csrf": {csrf}, "action": {"cancel"}, "run": {a, b2, ended}}
		p = admin.post("/ui/runs/bulk", form)
		if p.status != http.StatusOK || !strings.Contains(p.body, "2 of 3 runs cancelled") || !strings.Contains(p.body, "not done: it had already ended") {
			t.Fatalf("selected cancel: %d\n%s", p.status, p.body)
		}
		for _, id := range []string{a, b2} {
			if r, _ := e.c.Inspector().GetRun(ctx, id); r.Status != client.StatusCancelled {
				t.Errorf("run %s after the bulk cancel: %s", id, r.Status)
			}
		}

		// Every run matching a search: the cancelled runs of the task.
		all := url.Values{"action": {"retry"}, "all": {"1"}, "task": {orderTask.Name()}, "status": {"cancelled"}}
		p = admin.get("/ui/runs/bulk?" + all.Encode())
		if p.status != http.StatusOK || !strings.Contains(p.body, "Dry run: <strong>3</strong> runs would be retried") {
			t.Fatalf("filter confirmation: %d\n%s", p.status, p.body)
		}
		all.Set("csrf", csrf)
		p = admin.post("/ui/runs/bulk", all)
		if p.status != http.StatusOK || !strings.Contains(p.body, "3 of 3 runs retried") || strings.Count(p.body, "retried as") != 3 {
			t.Fatalf("filter retry: %d\n%s", p.status, p.body)
		}
		if r, _ := e.c.Inspector().GetRun(ctx, a); r.RetriedBy == "" {
			t.Errorf("run %s not retried: %+v", a, r)
		}
		// The same search now matches none: nothing to confirm.
		all.Del("csrf")
		if p := admin.get("/ui/runs/bulk?" + all.Encode()); !strings.Contains(p.body, "<strong>0</strong> runs would be retried") || strings.Contains(p.body, `id="confirm"`) {
			t.Fatalf("a search matching none:\n%s", p.body)
		}
		// A key search keeps the runs of that key.
		key := url.Values{"action": {"cancel"}, "all": {"1"}, "q": {"order:bulk-a"}}
		if p := admin.get("/ui/runs/bulk?" + key.Encode()); !strings.Contains(p.body, "<strong>1</strong> run would be cancelled") {
			t.Fatalf("a key search:\n%s", p.body)
		}

		for q, want := range map[string]int{"action=delete&run=" + a: http.StatusBadRequest, "action=cancel": http.StatusBadRequest} {
			if p := admin.get("/ui/runs/bulk?" + q); p.status != want {
				t.Errorf("GET /ui/runs/bulk?%s: %d, want %d", q, p.status, want)
			}
		}

		reader := e.browser()
		reader.signIn(testReadOnly)
		if p := reader.get("/ui/runs"); strings.Contains(p.body, `type="checkbox"`) || strings.Contains(p.body, "/ui/runs/bulk") {
			t.Errorf("the read-only runs page offers bulk actions:\n%s", p.body)
		}
		if p := reader.get("/ui/runs/bulk?" + key.Encode()); p.status != http.StatusOK || strings.Contains(p.body, `action="/ui/runs/bulk"`) {
			t.Errorf("the read-only confirmation page offers a form: %d\n%s", p.status, p.body)
		}
		key.Set("csrf", reader.csrf("/ui/runs"))
		if p := reader.post("/ui/runs/bulk", key); p.status != http.StatusForbidden {
			t.Errorf("read-only bulk cancel: %d", p.status)
		}
	})
}
