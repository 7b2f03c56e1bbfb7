package httpapi

import (
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// No error answer repeats a large value of the request: each quotes at
// most a short prefix of it and its size, and the whole answer stays under
// 2 KB, whether the message is the server's own or another package's (the
// 422 of an expression whose input holds a 1 MB number).
func TestErrorsQuoteOnlyAPrefix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{server: Options{MaxBodyBytes: 2 << 20}})
	e.register(task.Spec{Name: "charge", Expression: `"charge:" + input.orderId`, Strategy: task.StrategyTTL, TTLMs: 60000})
	huge := strings.Repeat("9", 1000000)
	long := strings.Repeat("x", 10000)
	cases := []struct {
		method, path, body string
		header             map[string]string
		status             int
	}{
		{"POST", "/api/v1/tasks/charge/runs", `{"input":{"orderId":` + huge + `}}`, nil, http.StatusUnprocessableEntity},
		{"POST", "/api/v1/tasks/charge/runs", `{"input":{"orderId":"` + huge + `"}}`, nil, http.StatusUnprocessableEntity},
		{"POST", "/api/v1/tasks/charge/runs", `{"` + long + `":1}`, nil, http.StatusBadRequest},
		{"POST", "/api/v1/tasks/charge/runs", `{"onConflict":"` + long + `"}`, nil, http.StatusBadRequest},
		{"POST", "/api/v1/tasks/charge/runs", `{}`, map[string]string{"Content-Type": "text/" + long}, http.StatusUnsupportedMediaType},
		{"POST", "/api/v1/tasks/" + long + "/runs", `{}`, nil, http.StatusNotFound},
		{"GET", "/api/v1/runs/" + long, "", nil, http.StatusNotFound},
		{"GET", "/api/v1/runs/" + long + "/result", "", nil, http.StatusNotFound},
		{"GET", "/api/v1/runs/r/result?wait=" + long, "", nil, http.StatusBadRequest},
		{"GET", "/api/v1/events/" + long, "", nil, http.StatusNotFound},
		{"GET", "/api/v1/keys/" + long, "", nil, http.StatusNotFound},
		{"POST", "/api/v1/keys/" + long + "/signal", `{"payload":1}`, nil, http.StatusNotFound},
		{"POST", "/api/v1/events", `{"key":"` + long + `"}`, nil, http.StatusBadRequest},
	}
	for _, c := range cases {
		h := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
		for k, v := range c.header {
			h[k] = v
		}
		var body any
		if c.body != "" {
			body = c.body
		}
		r := e.callWith(c.method, c.path, body, h)
		name := c.method + " " + clip(c.path)
		if r.status != c.status {
			t.Errorf("%s: status %d, want %d: %.300s", name, r.status, c.status, r.raw)
			continue
		}
		if len(r.raw) > 2048 || r.str("message") == "" {
			t.Errorf("%s: a %d-byte answer: %.300s…", name, len(r.raw), r.raw)
		}
		if strings.Contains(string(r.raw), strings.Repeat("x", maxQuoted+1)) || strings.Contains(string(r.raw), strings.Repeat("9", maxQuoted+1)) {
			t.Errorf("%s: quotes more than %d bytes of a value: %s", name, maxQuoted, r.raw)
		}
	}
}

func TestBoundMessage(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 100)
	if got, want := boundMessage("value "+big+" is bad"), "value "+strings.Repeat("é", 32)+"…(200 bytes) is bad"; got != want {
		t.Errorf("boundMessage = %q, want %q", got, want)
	}
	if got := boundMessage("short message"); got != "short message" {
		t.Errorf("boundMessage changed a short message: %q", got)
	}
	many := strings.Repeat("word ", 1000)
	if got := boundMessage(many); len(got) > maxMessage+len("… (message cut)") || !strings.HasSuffix(got, "(message cut)") {
		t.Errorf("boundMessage of %d bytes = %d bytes: %q", len(many), len(got), got[len(got)-40:])
	}
	if got, want := quote(strings.Repeat("a", 100)), `"`+strings.Repeat("a", 64)+`…" (100 bytes)`; got != want {
		t.Errorf("quote = %s, want %s", got, want)
	}
}
