package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// Keys with slashes, "//" and dot segments are served as written, for a
// lookup and a signal alike, percent-encoded or not; paths that ServeMux
// would clean get no redirect; every answer is JSON.
func TestPathsAreNeverCleanedOrRedirected(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	def := mustDef(t, "hook", task.Options{Idempotency: task.Status(`input.key`, time.Minute)})
	e.register(taskdef.Spec(def))
	keys := []string{"webhook:https://shop.example/evt/1", "a/../b", "./x", "a//b", "trailing/", "a/./b/..", "x/signal"}
	owners := map[string]string{}
	for _, k := range keys {
		owners[k] = e.call("POST", "/api/v1/tasks/hook/runs", map[string]any{"input": map[string]any{"key": k}}).expect(t, http.StatusCreated).str("runId")
	}
	for _, k := range keys {
		for _, p := range []string{k, url.PathEscape(k)} {
			r := e.call("GET", "/api/v1/keys/"+p, nil).expect(t, http.StatusOK)
			if r.str("key") != k || r.str("runId") != owners[k] {
				t.Errorf("GET /api/v1/keys/%s: %s, want key %q held by %s", p, r.raw, k, owners[k])
			}
			s := e.call("POST", "/api/v1/keys/"+p+"/signal", map[string]any{"payload": 1}).expect(t, http.StatusAccepted)
			if s.str("runId") != owners[k] {
				t.Errorf("POST /api/v1/keys/%s/signal: %s, want run %s", p, s.raw, owners[k])
			}
		}
	}
	cases := []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/api/v1/runs//result", 400, CodeInvalidParameter},
		{"GET", "/api/v1/runs/", 400, CodeInvalidParameter},
		{"POST", "/api/v1/tasks//runs", 400, CodeInvalidParameter},
		{"GET", "/api/v1/runs/../result", 404, CodeRunNotFound},
		{"GET", "/api/v1/runs/./x", 404, CodeNotFound},
		{"GET", "/api/v1/key", 404, CodeNotFound},
		{"GET", "/api/v1/keys/", 400, CodeInvalidParameter},
		{"GET", "/api/v1/tasks/", 404, CodeNotFound},
		{"GET", "//api/v1/tasks", 404, CodeNotFound},
		{"GET", "/api/v1/./tasks", 404, CodeNotFound},
		{"GET", "/api/v1/x/../tasks", 404, CodeNotFound},
		{"GET", "/healthz/", 404, CodeNotFound},
		{"GET", "/", 404, CodeNotFound},
		{"HEAD", "/api/v1/tasks", 405, ""},
		{"OPTIONS", "/api/v1/tasks", 405, CodeMethodNotAllowed},
		{"PUT", "/api/v1/keys/a/b", 405, CodeMethodNotAllowed},
		{"GET", "/api/v1/runs/%00/result", 404, CodeRunNotFound},
		{"GET", "/api/v1/runs/a%0D%0Ab", 404, CodeRunNotFound},
		{"GET", "/api/v1/runs/" + strings.Repeat("r", 32<<10), 404, CodeRunNotFound},
	}
	for _, c := range cases {
		r := e.call(c.method, c.path, nil)
		name := c.method + " " + clip(c.path)
		if r.status != c.status || c.code != "" && r.str("error") != c.code {
			t.Errorf("%s: %d %.200s, want %d %s", name, r.status, r.raw, c.status, c.code)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
		if r.status == 405 && r.header.Get("Allow") == "" {
			t.Errorf("%s: 405 without Allow", name)
		}
	}
}

// A body is read as JSON when its Content-Type says JSON: application/json
// or an application/*+json type, in UTF-8. No Content-Type, another type or
// another charset is 415.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	for ct, want := range map[string]int{
		"application/json":                  http.StatusAccepted,
		"application/json; charset=utf-8":   http.StatusAccepted,
		"application/JSON; charset=UTF-8":   http.StatusAccepted,
		"application/cloudevents+json":      http.StatusAccepted,
		"application/problem+json":          http.StatusAccepted,
		"":                                  http.StatusUnsupportedMediaType,
		"text/json":                         http.StatusUnsupportedMediaType,
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"application/json; charset=latin1":  http.StatusUnsupportedMediaType,
		"application/json; charset":         http.StatusUnsupportedMediaType,
	} {
		h := map[string]string{"Authorization": "Bearer " + testToken}
		if ct != "" {
			h["Content-Type"] = ct
		}
		r := e.callWith("POST", "/api/v1/events", `{"key":"k.seen"}`, h)
		if ct == "" {
			// callWith sets application/json on a body; send none.
			r = e.rawPost("/api/v1/events", `{"key":"k.seen"}`)
		}
		if r.status != want || want == http.StatusUnsupportedMediaType && r.str("error") != CodeUnsupportedMediaType {
			t.Errorf("Content-Type %q: %d %s, want %d", ct, r.status, r.raw, want)
		}
	}
}
