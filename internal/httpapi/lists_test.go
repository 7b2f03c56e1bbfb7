package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// pageAll follows a listing's nextCursor to its end and returns the
// values of field of every item of list.
func (e *env) pageAll(path, list, field string) []string {
	e.t.Helper()
	var out []string
	cursor := ""
	// A keys listing scans the whole server, which other tests fill too:
	// pages are bounded by what SCAN can meet, not by the test's keys.
	for pages := 0; ; pages++ {
		if pages > 20000 {
			e.t.Fatalf("%s does not end", path)
		}
		p := path
		if cursor != "" {
			u, err := url.Parse(path)
			if err != nil {
				e.t.Fatal(err)
			}
			q := u.Query()
			q.Set("cursor", cursor)
			u.RawQuery = q.Encode()
			p = u.String()
		}
		r := e.call("GET", p, nil).expect(e.t, http.StatusOK)
		for _, item := range r.body[list].([]any) {
			out = append(out, item.(map[string]any)[field].(string))
		}
		if cursor = r.str("nextCursor"); cursor == "" {
			return out
		}
	}
}

// orders triggers n runs of task "orders" over HTTP: customer 42 for even
// i, 7 for odd; metadata source web for i < 3. It returns their IDs,
// newest first.
func (e *env) orders(n int) []string {
	e.t.Helper()
	e.register(task.Spec{Name: "orders", Expression: `"order:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	var ids []string
	for i := range n {
		customer, source := 7, "api"
		if i%2 == 0 {
			customer = 42
		}
		if i < 3 {
			source = "web"
		}
		r := e.call("POST", "/api/v1/tasks/orders/runs", map[string]any{
			"input": map[string]any{"id": fmt.Sprint(i), "customer": customer}, "additionalMetadata": map[string]any{"source": source},
		}).expect(e.t, http.StatusCreated)
		ids = append(ids, r.str("runId"))
	}
	slices.Reverse(ids)
	return ids
}

// GET /api/v1/runs pages newest first with stable cursors and filters by
// task, status, key and input and metadata fields.
func TestListRunsOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		ids := e.orders(12)
		if got := e.pageAll("/api/v1/runs?limit=5", "runs", "id"); !slices.Equal(got, ids) {
			t.Fatalf("listed %v, want %v", got, ids)
		}
		// Runs triggered mid-listing do not shift the pages.
		first := e.call("GET", "/api/v1/runs?limit=4", nil).expect(t, http.StatusOK)
		late := e.call("POST", "/api/v1/tasks/orders/runs", map[string]any{"input": map[string]any{"id": "late"}}).expect(t, http.StatusCreated).str("runId")
		rest := e.pageAll("/api/v1/runs?limit=4&until=2100-01-01T00:00:00Z&cursor="+url.QueryEscape(first.str("nextCursor")), "runs", "id")
		if !slices.Equal(rest, ids[4:]) {
			t.Fatalf("after the first page: %v, want %v", rest, ids[4:])
		}
		if item := first.body["runs"].([]any)[0].(map[string]any); item["input"] != nil || item["additionalMetadata"] != nil {
			t.Errorf("a listed run carries its input: %v", item)
		}

		pick := func(is ...int) []string {
			var out []string
			for _, i := range is {
				out = append(out, ids[len(ids)-1-i])
			}
			return out
		}
		for _, tc := range []struct {
			query string
			want  []string
		}{
			{"where=input.customer%3D42&limit=2", pick(10, 8, 6, 4, 2, 0)},
			{"where=metadata.source=web", pick(2, 1, 0)},
			{"where=metadata.source=web&where=input.customer=42", pick(2, 0)},
			{"key=order:3", pick(3)},
			{"task=orders&status=queued&limit=1000", append([]string{late}, ids...)},
			{"status=failed", nil},
			{"task=nosuch", nil},
			{"since=2100-01-01T00:00:00Z", nil},
		} {
			if got := e.pageAll("/api/v1/runs?"+tc.query, "runs", "id"); !slices.Equal(got, tc.want) {
				t.Errorf("?%s: listed %v, want %v", tc.query, got, tc.want)
			}
		}
	})
}

// Bad list parameters are 400 invalid_parameter naming the parameter and,
// for the page size, the limit.
func TestListParametersAreChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	for _, tc := range []struct {
		path, field, message string
	}{
		{"/api/v1/runs?limit=1001", "limit", "from 1 to 1000"},
		{"/api/v1/runs?limit=0", "limit", "from 1 to 1000"},
		{"/api/v1/runs?limit=ten", "limit", "from 1 to 1000"},
		{"/api/v1/keys?limit=5000", "limit", "from 1 to 1000"},
		{"/api/v1/events?limit=-1", "limit", "from 1 to 1000"},
		{"/api/v1/runs?cursor=nope", "cursor", "not a cursor"},
		{"/api/v1/events?cursor=bm9wZQ", "cursor", "not a cursor"},
		{"/api/v1/keys?cursor=nope", "cursor", "not a cursor"},
		{"/api/v1/runs?status=done", "status", "queued, running"},
		{"/api/v1/keys?status=done", "status", "queued, running"},
		{"/api/v1/runs?since=yesterday", "since", "RFC 3339"},
		{"/api/v1/runs?since=2026-02-01T00:00:00Z&until=2026-01-01T00:00:00Z", "since", "is not before until"},
		{"/api/v1/runs?where=customer=42", "where", `start with "input." or "metadata."`},
		{"/api/v1/runs?where=input.x", "where", "input.<field>=<value>"},
		{"/api/v1/runs?where=input.a=1&where=input.b=1&where=input.c=1&where=input.d=1&where=input.e=1&where=input.f=1&where=input.g=1&where=input.h=1&where=input.i=1",
			"where", "over the limit of 8"},
		{"/api/v1/runs?tsak=orders", "tsak", "not known"},
		{"/api/v1/runs?limit=1&limit=2", "limit", "given 2 times"},
		{"/api/v1/tasks?since=soon", "since", "RFC 3339"},
	} {
		r := e.call("GET", tc.path, nil).expect(t, http.StatusBadRequest)
		if r.str("error") != CodeInvalidParameter || r.str("field") != tc.field || !strings.Contains(r.str("message"), tc.message) {
			t.Errorf("GET %s: %s, want invalid_parameter on %s saying %q", tc.path, r.raw, tc.field, tc.message)
		}
	}
}

// GET /api/v1/keys lists held keys with their owners, by glob and owner
// status; GET /api/v1/events lists events by event key.
func TestListKeysAndEventsOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		ids := e.orders(5)
		e.call("POST", "/api/v1/runs/"+ids[0]+"/cancel", nil).expect(t, http.StatusOK)
		keys := e.pageAll("/api/v1/keys?match=order:*&limit=2", "keys", "key")
		slices.Sort(keys)
		if want := []string{"order:0", "order:1", "order:2", "order:3", "order:4"}; !slices.Equal(keys, want) {
			t.Fatalf("keys %v, want %v", keys, want)
		}
		if got := e.pageAll("/api/v1/keys?status=cancelled&task=orders", "keys", "runId"); !slices.Equal(got, ids[:1]) {
			t.Errorf("keys of cancelled owners held by %v, want %v", got, ids[:1])
		}
		if got := e.pageAll("/api/v1/keys?task=other", "keys", "key"); len(got) != 0 {
			t.Errorf("keys of task other: %v", got)
		}

		e.register(task.Spec{Name: "hook", Expression: `"hook:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"a", "b"}})
		var wantA []string
		for i := range 7 {
			key := "b"
			if i%2 == 0 {
				key = "a"
			}
			r := e.call("POST", "/api/v1/events", map[string]any{"key": key, "payload": map[string]any{"id": fmt.Sprint(i % 3)}}).expect(t, http.StatusAccepted)
			if key == "a" {
				wantA = append(wantA, r.str("id"))
			}
		}
		slices.Reverse(wantA)
		if got := e.pageAll("/api/v1/events?key=a&limit=3", "events", "id"); !slices.Equal(got, wantA) {
			t.Fatalf("events of key a: %v, want %v", got, wantA)
		}
		if got := e.pageAll("/api/v1/events?limit=2", "events", "id"); len(got) != 7 {
			t.Fatalf("listed %d events, want 7", len(got))
		}
		if got := e.pageAll("/api/v1/events?until=2000-01-01T00:00:00Z", "events", "id"); len(got) != 0 {
			t.Fatalf("events before 2000: %v", got)
		}
	})
}

// GET /api/v1/tasks counts the runs of each task by status.
func TestListTasksCountsRuns(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		ids := e.orders(4)
		e.call("POST", "/api/v1/runs/"+ids[1]+"/cancel", nil).expect(t, http.StatusOK)
		r := e.call("GET", "/api/v1/tasks", nil).expect(t, http.StatusOK)
		counts := r.body["runCounts"].(map[string]any)
		got := fmt.Sprint(counts["tasks"])
		if want := "map[orders:map[cancelled:1 queued:3]]"; got != want || counts["counted"] != 4.0 || counts["truncated"] != false {
			t.Fatalf("runCounts = %v, want tasks %s, counted 4", counts, want)
		}
		r = e.call("GET", "/api/v1/tasks?since=2100-01-01T00:00:00Z", nil).expect(t, http.StatusOK)
		if c := r.body["runCounts"].(map[string]any); c["counted"] != 0.0 {
			t.Fatalf("runCounts of a future window = %v", c)
		}
	})
}
