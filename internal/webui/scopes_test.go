package webui

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/auth"
	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/events"
)

// dashboardRoute is a route of the dashboard's router and what it needs:
// "" (open: sign-in, static files), "session" (any signed-in session),
// "read" (a page: read scope) or "operate" (an action).
type dashboardRoute struct {
	pattern string
	needs   string
}

// dashboardRoutes reads the routes from the router's source (UI.routes in
// webui.go): each mux.HandleFunc or mux.Handle with its pattern, and
// whether its handler is u.see (a page), u.act(h, true) (an action),
// u.act(h, false) (any session) or neither (open). A route added there
// is tried by TestEveryDashboardRouteWithEveryScope without more ado.
func dashboardRoutes(t *testing.T) []dashboardRoute {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "webui.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []dashboardRoute
	ast.Inspect(f, func(n ast.Node) bool {
		fn, ok := n.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "routes" {
			return true
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 2 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle") {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok {
				t.Fatalf("a route's pattern is not a string literal")
			}
			pattern, _ := strconv.Unquote(lit.Value)
			r := dashboardRoute{pattern: pattern}
			if h, ok := call.Args[1].(*ast.CallExpr); ok {
				if hs, ok := h.Fun.(*ast.SelectorExpr); ok {
					switch {
					case hs.Sel.Name == "see":
						r.needs = "read"
					case hs.Sel.Name == "act" && len(h.Args) == 2:
						if id, ok := h.Args[1].(*ast.Ident); ok && id.Name == "true" {
							r.needs = "operate"
						} else {
							r.needs = "session"
						}
					}
				}
			}
			out = append(out, r)
			return false
		})
		return false
	})
	return out
}

// Every route of the dashboard, signed in with a token of every scope: a
// token of trigger scope alone does not sign in; read scope sees every
// page but is refused every action with 403; operate and admin act. The
// open routes need no session.
func TestEveryDashboardRouteWithEveryScope(t *testing.T) {
	t.Parallel()
	tokens := map[auth.Scope]string{
		auth.ScopeTrigger: "ui-trigger-token-0123456789",
		auth.ScopeRead:    "ui-read-token-0123456789",
		auth.ScopeOperate: "ui-operate-token-0123456789",
		auth.ScopeAdmin:   "ui-admin-token-0123456789ab",
	}
	var ts []auth.Token
	for s, v := range tokens {
		ts = append(ts, httpapi.LegacyToken(string(s)+"-only", v, s))
	}
	keys, err := auth.NewKeyring("", ts...)
	if err != nil {
		t.Fatal(err)
	}
	routes := dashboardRoutes(t)
	kinds := map[string]int{}
	for _, r := range routes {
		kinds[r.needs]++
	}
	if kinds["read"] < 10 || kinds["operate"] < 3 || kinds["session"] < 1 || kinds[""] < 3 {
		t.Fatalf("read the routes wrong: %v", kinds)
	}
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{Tokens: keys}})
	run := e.trigger(context.Background(), order{ID: "scopes"})

	// A trigger token does not sign in.
	b := e.browser()
	if p := b.post("/ui/login", url.Values{"token": {tokens[auth.ScopeTrigger]}, "next": {"/ui/"}}); p.status != http.StatusUnauthorized {
		t.Errorf("sign-in with a trigger token: %d, want 401", p.status)
	}
	for _, scope := range []auth.Scope{auth.ScopeRead, auth.ScopeOperate, auth.ScopeAdmin} {
		b := e.browser()
		b.signIn(tokens[scope])
		csrf := b.csrf("/ui/")
		var logout *dashboardRoute
		for i, r := range routes {
			method, path, _ := strings.Cut(r.pattern, " ")
			if path == "" {
				method, path = http.MethodGet, method
			}
			if r.needs == "session" {
				logout = &routes[i]
				continue
			}
			if strings.HasPrefix(path, "/ui/logout") {
				continue // sign-outs end the session: tried below, last
			}
			path = strings.NewReplacer("{id}", url.PathEscape(run), "{$}", "").Replace(path)
			if strings.HasSuffix(path, "/") && path != "/ui/" {
				path += "static.css" // a subtree: any page under it
			}
			if strings.HasPrefix(path, "/ui/keys/release") {
				path += "?" + url.Values{"key": {"order:scopes"}, "owner": {run}}.Encode()
			}
			var p page
			if method == http.MethodPost {
				p = b.post(path, url.Values{"csrf": {csrf}, "key": {"order:scopes"}, "owner": {run}})
			} else {
				p = b.get(path)
			}
			allowed := r.needs != "operate" || scope != auth.ScopeRead
			switch {
			case r.needs == "" && p.status == http.StatusForbidden:
				t.Errorf("open route %s with a %s session: 403", r.pattern, scope)
			case r.needs == "":
			case p.status == http.StatusUnauthorized || p.status == http.StatusSeeOther && strings.HasPrefix(p.header.Get("Location"), "/ui/login"):
				t.Errorf("%s with a %s session: sent to sign in (%d)", r.pattern, scope, p.status)
			case allowed && p.status == http.StatusForbidden:
				t.Errorf("%s with a %s session: 403, want it allowed:\n%.300s", r.pattern, scope, p.body)
			case !allowed && (p.status != http.StatusForbidden || !strings.Contains(p.body, "operate scope")):
				t.Errorf("%s with a %s session: %d, want 403 naming the operate scope", r.pattern, scope, p.status)
			}
		}
		if logout == nil {
			t.Fatal("no sign-out route")
		}
		// Signing out everywhere ends every session, this one too: a read
		// session is refused it, and then signs out alone.
		everywhere := b.post("/ui/logout/everywhere", url.Values{"csrf": {csrf}})
		if scope == auth.ScopeRead {
			if everywhere.status != http.StatusForbidden || !strings.Contains(everywhere.body, "operate scope") {
				t.Errorf("sign out everywhere with a read session: %d, want 403 naming the operate scope", everywhere.status)
			}
			if p := b.post("/ui/logout", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
				t.Errorf("sign out with a %s session: %d", scope, p.status)
			}
		} else if everywhere.status != http.StatusSeeOther {
			t.Errorf("sign out everywhere with a %s session: %d", scope, everywhere.status)
		}
		if p := b.get("/ui/runs"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login") {
			t.Errorf("after signing out, a %s session still opens /ui/runs: %d", scope, p.status)
		}
	}
}

// The events page says where each event came from: the webhook source,
// or the API.
func TestTheEventsPageShowsTheSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	ing, err := events.New(e.c, events.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := ing.Push(ctx, "github.push", nil, json.RawMessage(`{"webhook":{"source":"github","deliveryId":"d-1"}}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := ing.Push(ctx, "order.paid", nil, nil); err != nil {
		t.Fatal(err)
	}
	b := e.browser()
	b.signIn(testReadOnly)
	p := b.get("/ui/events")
	if !strings.Contains(p.body, `<td class="source">webhook <code>github</code></td>`) ||
		!strings.Contains(p.body, `<td class="source"><span class="muted">API</span></td>`) {
		t.Fatalf("the events page does not show the sources:\n%s", p.body)
	}
}
