package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/auth"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// scopeTokens are a token of each scope alone, by scope.
var scopeTokens = map[auth.Scope]string{
	auth.ScopeTrigger: "trigger-token-0123456789",
	auth.ScopeRead:    "read-token-0123456789ab",
	auth.ScopeOperate: "operate-token-0123456789",
	auth.ScopeAdmin:   "admin-token-0123456789a",
}

func scopedKeyring(t *testing.T) *auth.Keyring {
	t.Helper()
	var ts []auth.Token
	for s, v := range scopeTokens {
		ts = append(ts, LegacyToken(string(s)+"-only", v, s))
	}
	k, err := auth.NewKeyring("", ts...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// documentedScope reads the x-taskq-scope of a route's operation in
// api/openapi.yaml ("" when it has none).
func documentedScope(t *testing.T, method, pattern string) string {
	t.Helper()
	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	item := doc.Paths.Value(strings.ReplaceAll(pattern, "...}", "}"))
	if item == nil {
		t.Fatalf("%s %s is not in api/openapi.yaml", method, pattern)
	}
	op := item.GetOperation(method)
	if op == nil {
		t.Fatalf("%s %s is not in api/openapi.yaml", method, pattern)
	}
	s, _ := op.Extensions["x-taskq-scope"].(string)
	return s
}

// Every route of the router, with a token of every scope: a route that
// is neither open nor signed must declare its scope, the same as
// api/openapi.yaml documents; a token holding it (or admin) gets past the
// check, any other gets 403 forbidden naming the token and the scope, and
// writes nothing.
func TestEveryRouteWithEveryScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{server: Options{Tokens: scopedKeyring(t)}})
	e.register(task.Spec{Name: "charge", Expression: `input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	checked := 0
	for _, rt := range e.s.routes {
		doc := documentedScope(t, rt.method, rt.pattern)
		if rt.open || rt.signed {
			if doc != "" {
				t.Errorf("%s %s is served without a token but documents scope %s", rt.method, rt.pattern, doc)
			}
			continue
		}
		if rt.scope == "" {
			t.Errorf("%s %s declares no scope: give it one in routeTable and x-taskq-scope in api/openapi.yaml", rt.method, rt.pattern)
			continue
		}
		if doc != string(rt.scope) {
			t.Errorf("%s %s needs scope %s but api/openapi.yaml documents %q", rt.method, rt.pattern, rt.scope, doc)
		}
		for _, scope := range auth.Scopes {
			before := e.snapshot()
			r := e.callWith(rt.method, samplePath(rt.pattern), `{"input": {"id": "1"}, "key": "k"}`,
				map[string]string{"Authorization": "Bearer " + scopeTokens[scope]})
			allowed := scope == rt.scope || scope == auth.ScopeAdmin
			switch {
			case allowed && r.status == http.StatusForbidden:
				t.Errorf("%s %s with a %s token: 403 %s, want it allowed", rt.method, rt.pattern, scope, r.raw)
			case allowed && r.status == http.StatusUnauthorized:
				t.Errorf("%s %s with a %s token: 401 %s", rt.method, rt.pattern, scope, r.raw)
			case !allowed:
				want := fmt.Sprintf("token %q lacks the scope %q", string(scope)+"-only", rt.scope)
				if r.status != http.StatusForbidden || r.str("error") != CodeForbidden || !strings.Contains(r.str("message"), want) {
					t.Errorf("%s %s with a %s token: %d %s, want 403 forbidden naming %s", rt.method, rt.pattern, scope, r.status, r.raw, rt.scope)
				}
				if after := e.snapshot(); after != before {
					t.Errorf("%s %s with a %s token was refused but wrote to Redis", rt.method, rt.pattern, scope)
				}
			}
			checked++
		}
	}
	if checked < 30*len(auth.Scopes) {
		t.Fatalf("only %d route and scope pairs checked", checked)
	}
}

// A route added without a scope is refused to every token but admin.
func TestARouteWithoutAScopeNeedsAdmin(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{server: Options{Tokens: scopedKeyring(t)}})
	e.s.routes = append(e.s.routes, route{method: http.MethodGet, pattern: "/api/v1/new", segs: []string{"", "api", "v1", "new"},
		handler: func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, map[string]string{}) }})
	for _, scope := range auth.Scopes {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/api/v1/new", nil)
		req.Header.Set("Authorization", "Bearer "+scopeTokens[scope])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[bool]int{true: 200, false: 403}[scope == auth.ScopeAdmin]; resp.StatusCode != want {
			t.Errorf("a %s token on a route without a scope: %d, want %d", scope, resp.StatusCode, want)
		}
	}
}

// The audit log and taskq_http_changes_total name the token behind a
// state-changing request, never its value.
func TestChangesAreAuditedByTokenName(t *testing.T) {
	t.Parallel()
	logs := &redistest.LogBuffer{}
	e := newEnv(t, redistest.Mini(t), envOptions{server: Options{Tokens: scopedKeyring(t)}})
	e.s.log = slog.New(slog.NewTextHandler(logs, nil))
	e.callWith("POST", "/api/v1/events", `{"key":"audit.evt"}`, map[string]string{"Authorization": "Bearer " + scopeTokens[auth.ScopeTrigger]}).
		expect(t, http.StatusAccepted)
	r := e.callWith("GET", "/metrics", nil, map[string]string{"Authorization": "Bearer " + scopeTokens[auth.ScopeRead]}).expect(t, http.StatusOK)
	if want := `taskq_http_changes_total{code="202",route="POST /api/v1/events",token="trigger-only"} 1`; !strings.Contains(string(r.raw), want) {
		t.Errorf("metrics lack %s", want)
	}
	out := logs.String()
	if !strings.Contains(out, `msg="taskq: audit" token=trigger-only method=POST route="POST /api/v1/events"`) {
		t.Errorf("no audit line names the token:\n%s", out)
	}
	for _, v := range scopeTokens {
		if strings.Contains(out, v) || strings.Contains(string(r.raw), v) {
			t.Errorf("a token's value appears in the log or the metrics")
		}
	}
}

// Rotation with no window: a new token is added to the tokens file and
// loaded, both work, the old one is removed and the file loaded again;
// requests sent without pause all along never fail, but with the old
// token once it is gone.
func TestTokenRotationWithoutRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.yaml")
	const oldToken, newToken = "old-token-0123456789abcdef", "new-token-0123456789abcdef"
	write := func(tokens map[string]string) {
		var sb strings.Builder
		sb.WriteString("tokens:\n")
		for name, v := range tokens {
			fmt.Fprintf(&sb, "  - name: %s\n    sha256: %s\n    scopes: [trigger, read]\n", name, auth.Hash(v))
		}
		if err := os.WriteFile(file+".tmp", []byte(sb.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(file+".tmp", file); err != nil {
			t.Fatal(err)
		}
	}
	write(map[string]string{"ci-2025": oldToken})
	k, err := auth.NewKeyring(file)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistest.Mini(t), envOptions{server: Options{Tokens: k}})
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/api/v1/tasks", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	// Callers with the old token keep sending until told to switch; then
	// with the new one. None may fail.
	const callers = 4
	var (
		switched atomic.Bool
		moved    [callers]atomic.Bool // the caller's last request used the new token
		stop     = make(chan struct{})
		wg       sync.WaitGroup
		failures atomic.Int64
		sent     atomic.Int64
	)
	for c := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				tok := oldToken
				if switched.Load() {
					tok = newToken
				}
				if st := get(tok); st != http.StatusOK {
					failures.Add(1)
				}
				moved[c].Store(tok == newToken)
				sent.Add(1)
			}
		}()
	}
	// until waits (bounded) for cond, while the callers send.
	until := func(cond func() bool) {
		for range 10000 {
			if cond() {
				return
			}
			time.Sleep(time.Millisecond)
		}
		t.Fatal("the callers stopped sending")
	}
	waitSent := func(n int64) {
		start := sent.Load()
		until(func() bool { return sent.Load() >= start+n })
	}
	waitSent(20)
	write(map[string]string{"ci-2025": oldToken, "ci-2026": newToken})
	if err := e.s.Reload(); err != nil {
		t.Fatal(err)
	}
	if get(oldToken) != http.StatusOK || get(newToken) != http.StatusOK {
		t.Fatal("after adding the new token, both should work")
	}
	switched.Store(true)
	until(func() bool { // every caller has moved over
		for c := range moved {
			if !moved[c].Load() {
				return false
			}
		}
		return true
	})
	write(map[string]string{"ci-2026": newToken})
	if err := e.s.Reload(); err != nil {
		t.Fatal(err)
	}
	waitSent(20)
	close(stop)
	wg.Wait()
	if n := failures.Load(); n > 0 {
		t.Errorf("%d of %d requests failed during the rotation", n, sent.Load())
	}
	if st := get(oldToken); st != http.StatusUnauthorized {
		t.Errorf("the removed token: %d, want 401", st)
	}
	if st := get(newToken); st != http.StatusOK {
		t.Errorf("the new token: %d, want 200", st)
	}
	// A broken file keeps the tokens in force.
	if err := os.WriteFile(file, []byte("tokens: [{name: x, sha256: nothex, scopes: [read]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Reload(); err == nil || !strings.Contains(err.Error(), "sha256 must be") {
		t.Errorf("reload of a broken file: %v", err)
	}
	if st := get(newToken); st != http.StatusOK {
		t.Errorf("after a failed reload the new token: %d, want 200", st)
	}
}
