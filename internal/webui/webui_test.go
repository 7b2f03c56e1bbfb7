package webui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

func sessionCookie(t *testing.T, p page) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == CookieName {
			return c
		}
	}
	t.Fatalf("no %s cookie set; headers %v", CookieName, p.header)
	return nil
}

func TestSignInKeepsASignedSessionNeverTheToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	b := e.browser()

	p := b.get("/ui/runs?task=x")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login?next="+url.QueryEscape("/ui/runs?task=x") {
		t.Fatalf("a page before signing in: %d to %q, want 303 to the sign-in page", p.status, p.header.Get("Location"))
	}
	if p := b.get("/ui/runs?fragment=1"); p.status != http.StatusUnauthorized {
		t.Errorf("a poll before signing in: %d, want 401", p.status)
	}
	p = b.post("/ui/login", url.Values{"token": {"not-the-token-0123456789"}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "That token is not valid.") {
		t.Fatalf("wrong token: %d, want 401 saying so", p.status)
	}
	if strings.Contains(p.body, "not-the-token-0123456789") {
		t.Error("the sign-in page repeats the token it was sent")
	}
	p = b.post("/ui/login", url.Values{"token": {testToken}, "next": {"/ui/runs?task=x"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/runs?task=x" {
		t.Fatalf("sign in: %d to %q, want 303 back to the page asked for", p.status, p.header.Get("Location"))
	}
	c := sessionCookie(t, p)
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != Prefix || c.Secure {
		t.Errorf("cookie HttpOnly=%v SameSite=%v Path=%q Secure=%v, want HttpOnly, Strict, %s, not Secure over plain HTTP",
			c.HttpOnly, c.SameSite, c.Path, c.Secure, Prefix)
	}
	if strings.Contains(c.Value, testToken) || strings.Contains(c.Value, testReadOnly) {
		t.Errorf("the cookie holds a token: %q", c.Value)
	}
	for _, path := range []string{"/ui/", "/ui/runs", "/ui/keys", "/ui/events", "/ui/workers"} {
		p := b.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s signed in: %d, want 200", path, p.status)
		}
		if strings.Contains(p.body, testToken) {
			t.Errorf("GET %s shows the token", path)
		}
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q does not limit scripts to the dashboard's own", path, csp)
		}
	}
	// Another site's page cannot be where a sign-in lands.
	for _, next := range []string{"https://evil.example/", "//evil.example/ui/", "/api/v1/tasks"} {
		p := b.post("/ui/login", url.Values{"token": {testToken}, "next": {next}})
		if loc := p.header.Get("Location"); loc != "/ui/" {
			t.Errorf("sign in with next=%q goes to %q, want /ui/", next, loc)
		}
	}
	// Signing out ends the session in this browser.
	p = b.post("/ui/logout", url.Values{"csrf": {b.csrf("/ui/")}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("sign out: %d", p.status)
	}
	if p := b.get("/ui/"); p.status != http.StatusSeeOther {
		t.Errorf("after signing out: %d, want 303 to the sign-in page", p.status)
	}
}

func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{tls: true})
	b := e.browser()
	b.hc.Transport = e.hs.Client().Transport
	p := b.post("/ui/login", url.Values{"token": {testToken}})
	if c := sessionCookie(t, p); !c.Secure {
		t.Error("over TLS the session cookie is not Secure")
	}
}

func TestSessionsEndAfterTheirTTLAndWhenTheTokenChanges(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	ss := &sessions{key: []byte("k1"), ttl: time.Hour, clock: clock}
	s, value, err := ss.issue(roleAdmin, strings.NewReader(strings.Repeat("n", 16)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ss.check(value); got == nil || got.Role != roleAdmin {
		t.Fatalf("a fresh session is refused: %+v", got)
	}
	for _, forged := range []string{strings.Replace(value, roleAdmin, roleReader, 1), value + "x", "v1.admin.1.n.", ""} {
		if ss.check(forged) != nil {
			t.Errorf("forged cookie %q accepted", forged)
		}
	}
	other := &sessions{key: []byte("k2"), ttl: time.Hour, clock: clock}
	if other.check(value) != nil {
		t.Error("a session signed with another key (another token) is accepted")
	}
	if !ss.checkCSRF(s, ss.csrf(s)) || ss.checkCSRF(s, "") || ss.checkCSRF(s, other.csrf(s)) {
		t.Error("the CSRF check does not hold the session's token alone")
	}
	clock.Add(time.Hour + time.Second)
	if ss.check(value) != nil {
		t.Error("a session past its TTL is accepted")
	}
	k1, _ := sessionKey("token-a-0123456789", "", nil)
	k2, _ := sessionKey("token-b-0123456789", "", nil)
	k3, _ := sessionKey("token-a-0123456789", "reader-0123456789", nil)
	if string(k1) == string(k2) || string(k1) == string(k3) {
		t.Error("changing a token does not change the session key")
	}
}

func TestActionsNeedTheCSRFTokenTheOriginAndAnActingSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "csrf-1"})
	cancelPath := "/ui/runs/" + run + "/cancel"

	admin := e.browser()
	admin.signIn(testToken)
	token := admin.csrf(cancelPath)
	if p := admin.post(cancelPath, url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("cancel without the CSRF token: %d, want 403", p.status)
	}
	if p := admin.post(cancelPath, url.Values{"csrf": {"AAAA"}}); p.status != http.StatusForbidden {
		t.Errorf("cancel with a wrong CSRF token: %d, want 403", p.status)
	}
	req, _ := http.NewRequest(http.MethodPost, e.url+cancelPath, strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if p := admin.do(req); p.status != http.StatusForbidden {
		t.Errorf("cancel from another origin: %d, want 403", p.status)
	}

	reader := e.browser()
	reader.signIn(testReadOnly)
	rp := reader.get("/ui/runs/" + run)
	if rp.status != http.StatusOK || !strings.Contains(rp.body, "read-only") {
		t.Fatalf("run page, read-only: %d", rp.status)
	}
	if strings.Contains(rp.body, `class="button danger action"`) || strings.Contains(rp.body, "Cancel this run") {
		t.Error("a read-only session is offered to cancel")
	}
	if p := reader.post(cancelPath, url.Values{"csrf": {reader.csrf("/ui/")}}); p.status != http.StatusForbidden {
		t.Errorf("cancel from a read-only session with its own CSRF token: %d, want 403", p.status)
	}
	if p := reader.post(cancelPath, url.Values{"csrf": {token}}); p.status != http.StatusForbidden {
		t.Errorf("cancel from a read-only session with the admin's CSRF token: %d, want 403", p.status)
	}
	if r, err := e.c.Inspector().GetRun(ctx, run); err != nil || r.Status != client.StatusQueued {
		t.Fatalf("after refused cancels the run is %v (%v), want queued", r, err)
	}

	p := admin.post(cancelPath, url.Values{"csrf": {token}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/runs/"+run+"?done=cancelled" {
		t.Fatalf("cancel: %d to %q", p.status, p.header.Get("Location"))
	}
	if r, err := e.c.Inspector().GetRun(ctx, run); err != nil || r.Status != client.StatusCancelled {
		t.Errorf("after the cancel the run is %v (%v), want cancelled", r, err)
	}
}

func TestReleaseIsFencedByTheOwnerShown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	first := e.trigger(ctx, order{ID: "rel-1"})
	admin := e.browser()
	admin.signIn(testToken)
	confirm := "/ui/keys/release?" + url.Values{"key": {"order:rel-1"}, "owner": {first}}.Encode()
	token := admin.csrf(confirm)

	// The key changes hands between the confirmation and the click.
	if _, err := e.c.Inspector().ReleaseKey(ctx, "order:rel-1", first); err != nil {
		t.Fatal(err)
	}
	second := e.trigger(ctx, order{ID: "rel-1"})
	p := admin.post("/ui/keys/release", url.Values{"csrf": {token}, "key": {"order:rel-1"}, "owner": {first}})
	if p.status != http.StatusConflict {
		t.Fatalf("release of a key another run took since: %d, want 409", p.status)
	}
	if k, err := e.c.Inspector().GetKey(ctx, "order:rel-1"); err != nil || k.OwnerRunID != second {
		t.Fatalf("the newer owner's key: %+v, %v; want held by %s", k, err, second)
	}
	p = admin.post("/ui/keys/release", url.Values{"csrf": {token}, "key": {"order:rel-1"}, "owner": {second}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("release: %d", p.status)
	}
	var nh *client.StateError
	if _, err := e.c.Inspector().GetKey(ctx, "order:rel-1"); !(errors.As(err, &nh) && nh.Kind == client.ErrKeyNotHeld) {
		t.Errorf("after the release the key: %v, want not held", err)
	}
}

func TestSearchOpensARunByIDOrKeyAndFiltersByField(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	a := e.trigger(ctx, order{ID: "s-1", Amount: 10}, client.WithMetadata(map[string]any{"tenant": "acme"}))
	bID := e.trigger(ctx, order{ID: "s-2", Amount: 20}, client.WithMetadata(map[string]any{"tenant": "globex"}))
	b := e.browser()
	b.signIn(testToken)

	search := func(q string) page { return b.get("/ui/runs?" + url.Values{"q": {q}}.Encode()) }
	if p := search(a); p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/runs/"+a {
		t.Errorf("search by run ID: %d to %q, want the run", p.status, p.header.Get("Location"))
	}
	if p := search("order:s-2"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/runs/"+bID+"?") {
		t.Errorf("search by key: %d to %q, want the owner %s", p.status, p.header.Get("Location"), bID)
	}
	for q, want := range map[string]string{"amount=20": bID, "input.id=s-1": a, "metadata.tenant=acme": a, "metadata.tenant=globex": bID, "tenant=globex": ""} {
		p := search(q)
		if p.status != http.StatusOK {
			t.Errorf("search %q: %d", q, p.status)
			continue
		}
		if want == "" { // a field named without a side is the input's
			if strings.Contains(p.body, a) || strings.Contains(p.body, bID) || !strings.Contains(p.body, `href="/ui/runs?q=metadata.tenant%3Dglobex" id="search-metadata"`) {
				t.Errorf("search %q lists runs by their metadata, or does not offer the metadata search", q)
			}
			continue
		}
		other := a
		if want == a {
			other = bID
		}
		if !strings.Contains(p.body, want) || strings.Contains(p.body, other) {
			t.Errorf("search %q lists the wrong runs (want %s only)", q, want)
		}
	}
	// A released key's runs are found by their key.
	if _, err := e.c.Inspector().ReleaseKey(ctx, "order:s-1", a); err != nil {
		t.Fatal(err)
	}
	p := search("order:s-1")
	if p.status != http.StatusOK || !strings.Contains(p.body, a) || !strings.Contains(p.body, "no run holds it as its key now") {
		t.Errorf("search by a released key: %d, want the run that had it listed", p.status)
	}
}

func TestOptionsAreChecked(t *testing.T) {
	t.Parallel()
	c, err := client.New(client.Options{Redis: redistest.Mini(t).Client, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, o := range map[string]Options{
		"no client":             {Token: testToken},
		"no token":              {Client: c},
		"read-only alone":       {Client: c, Insecure: true, ReadOnlyToken: testReadOnly},
		"read-only is the same": {Client: c, Token: testToken, ReadOnlyToken: testToken},
		"negative poll":         {Client: c, Token: testToken, PollInterval: -time.Second},
	} {
		if _, err := New(o); err == nil || !strings.HasPrefix(err.Error(), "webui: ") {
			t.Errorf("%s: New = %v, want a webui: error", name, err)
		}
	}
}

func TestTheAPIKeepsItsTokenBesideTheDashboard(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	b := e.browser()
	b.signIn(testToken)
	if p := b.get("/ui"); p.status != http.StatusMovedPermanently || p.header.Get("Location") != "/ui/" {
		t.Errorf("GET /ui: %d to %q, want 301 to /ui/", p.status, p.header.Get("Location"))
	}
	// The session cookie is the dashboard's only: the API wants its bearer
	// token (and the cookie's path keeps it off /api/ anyway).
	req, _ := http.NewRequest(http.MethodGet, e.url+"/api/v1/tasks", nil)
	for _, c := range b.jar.Cookies(mustURL(t, e.url+"/ui/")) {
		req.AddCookie(c)
	}
	if p := b.do(req); p.status != http.StatusUnauthorized {
		t.Errorf("the API with the dashboard's cookie and no bearer token: %d, want 401", p.status)
	}
	if p := b.get("/ui/static/app.js"); p.status != http.StatusOK || !strings.Contains(p.header.Get("Content-Type"), "javascript") {
		t.Errorf("the script: %d %q", p.status, p.header.Get("Content-Type"))
	}
}

func TestALinkCannotMakeTheRunPageClaimAKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(ctx, order{ID: "claim-1"})
	b := e.browser()
	b.signIn(testToken)
	if p := b.get("/ui/runs/" + run + "?key=" + url.QueryEscape("order:claim-1")); !strings.Contains(p.body, `id="via-key"`) {
		t.Error("the run page does not confirm the key searched for")
	}
	if p := b.get("/ui/runs/" + run + "?key=" + url.QueryEscape("order:someone-else")); strings.Contains(p.body, `id="via-key"`) {
		t.Error("the run page claims a key the run does not hold, because a link said so")
	}
}

func TestWithoutATokenEveryVisitorMayAct(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{Insecure: true}})
	run := e.trigger(ctx, order{ID: "insecure-1"})
	b := e.browser()
	p := b.get("/ui/runs/" + run)
	if p.status != http.StatusOK || !strings.Contains(p.body, "Serving without authentication") || !strings.Contains(p.body, `id="cancel"`) {
		t.Fatalf("run page without a token: %d; want it served, saying so, with the cancel action", p.status)
	}
	if p := b.post("/ui/runs/"+run+"/cancel", url.Values{}); p.status != http.StatusForbidden {
		t.Errorf("a cancel without the CSRF token, insecure mode: %d, want 403 still", p.status)
	}
	if p := b.post("/ui/runs/"+run+"/cancel", url.Values{"csrf": {b.csrf("/ui/runs/" + run + "/cancel")}}); p.status != http.StatusSeeOther {
		t.Errorf("a cancel with the CSRF token, insecure mode: %d, want 303", p.status)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// The run page of a scheduled run says it waits, and until when.
func TestTheRunPageShowsAScheduledRunsDueTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	due := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	run := e.trigger(ctx, order{ID: "later-1"}, client.RunAt(due))
	b := e.browser()
	b.signIn(testToken)
	p := b.get("/ui/runs/" + run)
	if !strings.Contains(p.body, `id="run-scheduled"`) || !strings.Contains(p.body, due.Format("2006-01-02 15:04:05 UTC")) ||
		!strings.Contains(p.body, "waiting for its scheduled time") {
		t.Errorf("the run page of a scheduled run does not show its due time:\n%s", p.body)
	}
	now := e.trigger(ctx, order{ID: "now-1"})
	if p := b.get("/ui/runs/" + now); strings.Contains(p.body, `id="run-scheduled"`) {
		t.Error("the run page of a run queued now says it is scheduled")
	}
}

// The run page shows the run's priority, the default's said to be the
// lowest.
func TestTheRunPageShowsARunsPriority(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	high := e.trigger(ctx, order{ID: "high-1"}, client.WithPriority(3))
	low := e.trigger(ctx, order{ID: "low-1"})
	b := e.browser()
	b.signIn(testToken)
	if p := b.get("/ui/runs/" + high); !strings.Contains(p.body, `<dd id="run-priority">3</dd>`) {
		t.Errorf("the run page of a run of priority 3 does not say so:\n%s", p.body)
	}
	if p := b.get("/ui/runs/" + low); !strings.Contains(p.body, `<dd id="run-priority">1 <span class="muted">(the lowest, the default)</span></dd>`) {
		t.Errorf("the run page of a run of the default priority does not say so:\n%s", p.body)
	}
}
