package webui

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
)

// logBuffer is a log a test reads while servers write to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// withCookie is a browser holding a copy of another's session cookie.
func (e *env) withCookie(c *http.Cookie) *browser {
	b := e.browser()
	u, _ := url.Parse(e.url + "/ui/")
	b.jar.SetCookies(u, []*http.Cookie{{Name: c.Name, Value: c.Value, Path: c.Path}})
	return b
}

// cookieOf returns the session cookie b holds for the dashboard.
func (b *browser) cookie() *http.Cookie {
	b.e.t.Helper()
	u, _ := url.Parse(b.e.url + "/ui/")
	for _, c := range b.jar.Cookies(u) {
		if c.Name == CookieName {
			return &http.Cookie{Name: c.Name, Value: c.Value, Path: Prefix}
		}
	}
	b.e.t.Fatal("no session cookie")
	return nil
}

// Signing out ends the session on the server: a copy of its cookie taken
// before is refused afterwards, by this server and by another one sharing
// the Redis.
func TestSignOutEndsTheSessionOnEveryServer(t *testing.T) {
	t.Parallel()
	be := redistest.Mini(t)
	e := newEnv(t, be, envOptions{})
	other := newEnv(t, be, envOptions{})
	b := e.browser()
	b.signIn(testToken)
	copied := b.cookie()
	for _, srv := range []*env{e, other} {
		if p := srv.withCookie(copied).get("/ui/runs"); p.status != http.StatusOK {
			t.Fatalf("the copied cookie before sign-out: %d, want 200", p.status)
		}
	}
	p := b.get("/ui/logout?csrf=" + url.QueryEscape(b.csrf("/ui/")))
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login?done=signed-out" {
		t.Fatalf("sign out: %d to %q", p.status, p.header.Get("Location"))
	}
	for _, srv := range []*env{e, other} {
		c := srv.withCookie(copied)
		if p := c.get("/ui/runs"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/ui/login") {
			t.Errorf("the copied cookie after sign-out: %d to %q, want 303 to sign in", p.status, p.header.Get("Location"))
		}
		if p := c.get("/ui/runs?fragment=1"); p.status != http.StatusUnauthorized {
			t.Errorf("a refresh with the copied cookie after sign-out: %d, want 401", p.status)
		}
	}
	if p := b.get("/ui/login?done=signed-out"); !strings.Contains(p.body, "You signed out") {
		t.Errorf("the sign-in page after sign-out does not say so:\n%s", p.body)
	}
	// The sign-out link needs the session's CSRF token.
	b.signIn(testToken)
	if p := b.get("/ui/logout?csrf=AAAA"); p.status != http.StatusForbidden {
		t.Errorf("sign out with a wrong CSRF token: %d, want 403", p.status)
	}
	if p := b.get("/ui/runs"); p.status != http.StatusOK {
		t.Errorf("after a refused sign-out the session: %d, want still signed in", p.status)
	}
}

// "Sign out everywhere" ends every session, read-only ones too, on every
// server; only a session that may act can ask for it.
func TestSignOutEverywhere(t *testing.T) {
	t.Parallel()
	be := redistest.Mini(t)
	e := newEnv(t, be, envOptions{})
	other := newEnv(t, be, envOptions{})
	admin, reader, elsewhere := e.browser(), e.browser(), other.browser()
	admin.signIn(testToken)
	reader.signIn(testReadOnly)
	elsewhere.signIn(testToken)
	if p := reader.post("/ui/logout/everywhere", url.Values{"csrf": {reader.csrf("/ui/session")}}); p.status != http.StatusForbidden {
		t.Fatalf("sign out everywhere from a read-only session: %d, want 403", p.status)
	}
	if p := elsewhere.get("/ui/"); p.status != http.StatusOK {
		t.Fatalf("a refused sign-out everywhere ended a session: %d", p.status)
	}
	sp := admin.get("/ui/session")
	if !strings.Contains(sp.body, `id="signout-everywhere"`) {
		t.Fatalf("the session page offers no sign-out everywhere:\n%s", sp.body)
	}
	p := admin.post("/ui/logout/everywhere", url.Values{"csrf": {admin.csrf("/ui/session")}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/login?done=signed-out-everywhere" {
		t.Fatalf("sign out everywhere: %d to %q", p.status, p.header.Get("Location"))
	}
	for name, b := range map[string]*browser{"the admin": admin, "the reader": reader, "another server's": elsewhere} {
		if p := b.get("/ui/"); p.status != http.StatusSeeOther {
			t.Errorf("%s session after sign-out everywhere: %d, want 303 to sign in", name, p.status)
		}
	}
	admin.signIn(testToken)
	if p := admin.get("/ui/"); p.status != http.StatusOK {
		t.Errorf("a sign-in after sign-out everywhere: %d, want 200", p.status)
	}
}

// Failed sign-ins from one address are throttled: past the budget the
// answer is 429 with Retry-After, even for the right token, until the
// window ends.
func TestSignInIsThrottledPerAddress(t *testing.T) {
	t.Parallel()
	clock := &stepClock{now: time.Now()}
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{Clock: clock}})
	b := e.browser()
	wrong := url.Values{"token": {"not-the-token-0123456789"}}
	for i := range signInFailuresMax {
		if p := b.post("/ui/login", wrong); p.status != http.StatusUnauthorized {
			t.Fatalf("wrong token %d: %d, want 401", i+1, p.status)
		}
	}
	clock.Add(time.Minute)
	for _, tok := range []string{"not-the-token-0123456789", testToken} {
		p := b.post("/ui/login", url.Values{"token": {tok}})
		if p.status != http.StatusTooManyRequests {
			t.Fatalf("sign-in past the budget: %d, want 429", p.status)
		}
		ra, err := strconv.Atoi(p.header.Get("Retry-After"))
		if want := int((signInWindow - time.Minute) / time.Second); err != nil || ra != want {
			t.Errorf("Retry-After %q, want %d", p.header.Get("Retry-After"), want)
		}
		if !strings.Contains(p.body, "Too many failed sign-ins from your address") {
			t.Errorf("the 429 does not say why:\n%s", p.body)
		}
	}
	clock.Add(signInWindow)
	b.signIn(testToken)
}

// The audit log names the session that acted, by an ID that is neither
// the cookie nor the CSRF token; a cancel of a run that already ended is
// not logged again.
func TestTheAuditLogNamesTheSessionAndOnlyRealChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var log logBuffer
	e := newEnv(t, redistest.Mini(t), envOptions{ui: Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}})
	run := e.trigger(ctx, order{ID: "audit-1"})
	b := e.browser()
	b.signIn(testToken)
	token := b.csrf("/ui/runs/" + run + "/cancel")
	for i, want := range []string{"cancelled", "cancel-ended"} {
		p := b.post("/ui/runs/"+run+"/cancel", url.Values{"csrf": {token}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/runs/"+run+"?done="+want {
			t.Fatalf("cancel %d: %d to %q, want done=%s", i+1, p.status, p.header.Get("Location"), want)
		}
	}
	out := log.String()
	if n := strings.Count(out, "run cancelled from the dashboard"); n != 1 {
		t.Errorf("two cancels of one run logged %d cancels, want 1:\n%s", n, out)
	}
	m := regexp.MustCompile(`msg="taskq: dashboard sign-in" role=admin session=([0-9a-f]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the sign-in is not logged with its session:\n%s", out)
	}
	id := m[1]
	if !strings.Contains(out, `run cancelled from the dashboard" run=`+run+" was=queued session="+id) {
		t.Errorf("the cancel is not logged with the session %s (run %s):\n%s", id, run, out)
	}
	if c := b.cookie(); strings.Contains(c.Value, id) || strings.Contains(id, token) || strings.Contains(token, id) {
		t.Errorf("the session ID %s is part of the cookie or the CSRF token", id)
	}
	if p := b.get("/ui/session"); !strings.Contains(p.body, `<code id="session-id">`+id+`</code>`) {
		t.Errorf("the session page does not show the session's ID %s", id)
	}
}

// failingSessions is a session store that cannot be reached.
type failingSessions struct{}

var errDown = errors.New("dial tcp 127.0.0.1:1: connection refused")

func (failingSessions) UISessionSave(context.Context, string, time.Duration) error { return errDown }
func (failingSessions) UISessionLive(context.Context, string) (bool, error)        { return false, errDown }
func (failingSessions) UISessionDelete(context.Context, string) error              { return errDown }
func (failingSessions) UISessionEndAll(context.Context) (int64, error)             { return 0, errDown }

// A session the store cannot check is answered 503, not sent to sign in
// (so that a page's refresh keeps its data), and a sign-in is not taken
// without its record.
func TestASessionThatCannotBeCheckedIsUnavailableNotEnded(t *testing.T) {
	t.Parallel()
	be := redistest.Mini(t)
	e := newEnv(t, be, envOptions{})
	b := e.browser()
	b.signIn(testToken)
	down := newEnv(t, be, envOptions{ui: Options{Sessions: failingSessions{}}})
	c := down.withCookie(b.cookie())
	for _, path := range []string{"/ui/runs", "/ui/runs?fragment=1"} {
		p := c.get(path)
		if p.status != http.StatusServiceUnavailable || !strings.Contains(p.body, "Could not check your session") {
			t.Errorf("GET %s with the store down: %d, want 503 saying why:\n%s", path, p.status, p.body)
		}
	}
	if p := down.browser().post("/ui/login", url.Values{"token": {testToken}}); p.status != http.StatusServiceUnavailable {
		t.Errorf("sign-in with the store down: %d, want 503", p.status)
	}
}

// A request from another origin is refused as such, not as a missing CSRF
// token.
func TestARefusedOriginSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	run := e.trigger(context.Background(), order{ID: "origin-1"})
	b := e.browser()
	b.signIn(testToken)
	token := b.csrf("/ui/runs/" + run + "/cancel")
	for _, h := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/ui/runs/"+run+"/cancel", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header.Set(k, v)
		}
		p := b.do(req)
		if p.status != http.StatusForbidden || !strings.Contains(p.body, "came from another site") || strings.Contains(p.body, "CSRF token is missing") {
			t.Errorf("cancel with %v: %d, want 403 saying the origin was refused:\n%s", h, p.status, p.body)
		}
	}
	if p := b.post("/ui/runs/"+run+"/cancel", url.Values{"csrf": {"AAAA"}}); !strings.Contains(p.body, "CSRF token is missing or wrong") {
		t.Errorf("a wrong CSRF token is not said to be one:\n%s", p.body)
	}
}

// The confirmation pages offer a read-only session no form, only the
// reason.
func TestConfirmationPagesOfferAReadOnlySessionNoForm(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	queued := e.trigger(ctx, order{ID: "ro-1"})
	cancelled := e.trigger(ctx, order{ID: "ro-2"})
	if _, err := e.c.Handle(cancelled).Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	reader := e.browser()
	reader.signIn(testReadOnly)
	for _, path := range []string{
		"/ui/runs/" + queued + "/cancel",
		"/ui/runs/" + cancelled + "/retry",
		"/ui/keys/release?" + url.Values{"key": {"order:ro-1"}}.Encode(),
		"/ui/session",
	} {
		p := reader.get(path)
		if p.status != http.StatusOK {
			t.Errorf("GET %s read-only: %d, want 200", path, p.status)
			continue
		}
		if strings.Contains(strings.ToLower(p.body), `method="post"`) {
			t.Errorf("GET %s offers a read-only session a form that posts:\n%s", path, p.body)
		}
		if path != "/ui/session" && !strings.Contains(p.body, `id="read-only"`) {
			t.Errorf("GET %s does not tell a read-only session why it cannot act", path)
		}
	}
}
