package httpapi

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// samplePath fills a route pattern's wildcards.
func samplePath(pattern string) string {
	r := strings.NewReplacer("{id}", "some-id", "{task}", "charge", "{key...}", "charge:1")
	return r.Replace(pattern)
}

// Issue test 5: a missing or wrong token gets 401 on every API route (and
// /metrics); the health routes stay open.
func TestEveryAPIRouteNeedsTheToken(t *testing.T) {
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.register(task.Spec{Name: "charge", Expression: `input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	before := e.snapshot()
	badHeaders := map[string]map[string]string{
		"no header":      nil,
		"wrong token":    {"Authorization": "Bearer not-the-token"},
		"token prefix":   {"Authorization": "Bearer " + testToken[:4]},
		"token + more":   {"Authorization": "Bearer " + testToken + "x"},
		"basic scheme":   {"Authorization": "Basic " + testToken},
		"bare token":     {"Authorization": testToken},
		"empty bearer":   {"Authorization": "Bearer "},
		"token in query": nil,
	}
	protected := 0
	for _, rt := range e.s.routes {
		path := samplePath(rt.pattern)
		if rt.open {
			r := e.callWith(rt.method, path, nil, nil)
			if r.status != http.StatusOK {
				t.Errorf("open route %s %s without a token: %d %s", rt.method, path, r.status, r.raw)
			}
			continue
		}
		protected++
		for name, h := range badHeaders {
			p := path
			if name == "token in query" {
				p += "?token=" + testToken
			}
			r := e.callWith(rt.method, p, `{"input": {"id": "1"}, "key": "k"}`, h)
			if r.status != http.StatusUnauthorized || r.str("error") != CodeUnauthorized || r.str("message") == "" {
				t.Errorf("%s %s with %s: %d %s, want 401 unauthorized", rt.method, path, name, r.status, r.raw)
			}
			if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with %s: no WWW-Authenticate challenge", rt.method, path, name)
			}
		}
	}
	if protected < 9 {
		t.Fatalf("only %d protected routes checked", protected)
	}
	// Unknown API paths do not reveal whether they exist.
	if r := e.callWith("GET", "/api/v2/anything", nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("unknown API path without a token: %d", r.status)
	}
	if after := e.snapshot(); after != before {
		t.Fatalf("unauthorized requests wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
	}
	// With the token every route answers as itself.
	for _, rt := range e.s.routes {
		if r := e.call(rt.method, samplePath(rt.pattern), `{"input": {"id": "1"}}`); r.status == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401", rt.method, rt.pattern)
		}
	}
}

func TestNewRefusesNoTokenUnlessInsecure(t *testing.T) {
	b := redistest.Mini(t)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = New(Options{Client: c, Logger: quiet})
	var nt *NoTokenError
	if !errors.As(err, &nt) || !errors.Is(err, ErrNoToken) {
		t.Fatalf("New without a token: %v, want *NoTokenError", err)
	}
	for _, name := range []string{TokenFlag, TokenEnv, InsecureFlag} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if _, err := New(Options{Logger: quiet, Token: "x"}); err == nil {
		t.Error("New accepted options without a client")
	}
	if _, err := New(Options{Client: c, Logger: quiet, Token: "x", MaxBatch: -1}); err == nil {
		t.Error("New accepted a negative MaxBatch")
	}
	e := newEnv(t, b, envOptions{server: Options{Insecure: true}})
	if r := e.callWith("GET", "/api/v1/tasks", nil, nil); r.status != http.StatusOK {
		t.Fatalf("insecure server refused a request without a token: %d %s", r.status, r.raw)
	}
}
