package webui

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

const (
	testToken    = "ui-admin-token-0123456789"
	testReadOnly = "ui-reader-token-0123456789"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// order is the input of the test task, whose key is "order:" + input.id.
type order struct {
	ID     string `json:"id"`
	Amount int    `json:"amount,omitempty"`
}

var orderTask = task.Must[order, struct{}]("ui-order", task.Options{
	Idempotency: task.Status(`"order:" + input.id`, time.Hour),
	Retries:     2,
})

// env is the HTTP server with the dashboard, on a loopback port, over a
// test's own namespace.
type env struct {
	t   testing.TB
	c   *client.Client
	ui  *UI
	hs  *httptest.Server
	url string
}

type envOptions struct {
	ui  Options
	tls bool
}

func newEnv(t testing.TB, b *redistest.Backend, o envOptions) *env {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	uo := o.ui
	uo.Client = c
	if uo.Logger == nil {
		uo.Logger = quiet
	}
	if uo.Token == "" && !uo.Insecure && uo.Tokens == nil {
		uo.Token, uo.ReadOnlyToken = testToken, testReadOnly
	}
	ui, err := New(uo)
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.New(httpapi.Options{Client: c, Token: uo.Token, Tokens: uo.Tokens, Insecure: uo.Insecure, UI: ui, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(s.Handler())
	if o.tls {
		hs.StartTLS()
	} else {
		hs.Start()
	}
	t.Cleanup(hs.Close)
	e := &env{t: t, c: c, ui: ui, hs: hs, url: hs.URL}
	e.register(orderTask.Definition())
	return e
}

// register publishes a task's definition as a worker would, without one
// running it, so that its runs can be retried (RetryRun uses the
// registered definition) while they stay queued.
func (e *env) register(d *task.Definition) {
	e.t.Helper()
	spec := taskdef.Spec(d)
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "ui-test", RegisteredAt: time.Now().UTC()})
	if _, err := clientlink.Store(e.c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		e.t.Fatal(err)
	}
}

// browser is an HTTP client with a cookie jar that does not follow
// redirects, so that tests see them.
type browser struct {
	e   *env
	hc  *http.Client
	jar *cookiejar.Jar
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, jar: jar, hc: &http.Client{
		Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(req *http.Request) page {
	b.e.t.Helper()
	resp, err := b.hc.Do(req)
	if err != nil {
		b.e.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(raw)}
}

func (b *browser) get(path string) page {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.url+path, nil)
	return b.do(req)
}

// post sends a form as a browser's same-origin form would.
func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.e.url)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	return b.do(req)
}

// signIn signs in with token and fails the test unless it worked.
func (b *browser) signIn(token string) {
	b.e.t.Helper()
	p := b.post("/ui/login", url.Values{"token": {token}, "next": {"/ui/"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/ui/" {
		b.e.t.Fatalf("sign in: %d %s, want 303 to /ui/", p.status, p.header.Get("Location"))
	}
}

var csrfField = regexp.MustCompile(`(?:name="csrf" value="|/ui/logout\?csrf=)([^"&]+)`)

// csrf reads the CSRF token of the session from a page's form or its
// sign-out link.
func (b *browser) csrf(path string) string {
	b.e.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.e.t.Fatalf("GET %s: %d, no CSRF field in:\n%s", path, p.status, p.body)
	}
	return m[1]
}

// trigger starts a run of the test task, which no worker runs: it stays
// queued until cancelled.
func (e *env) trigger(ctx context.Context, in order, opts ...client.RunOption) string {
	e.t.Helper()
	ref, err := client.RunNoWait(ctx, e.c, orderTask, in, opts...)
	if err != nil {
		e.t.Fatalf("trigger %+v: %v", in, err)
	}
	return ref.ID()
}

// stepClock is a clock a test moves.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// runWorker starts w and shuts it down when the test ends.
func runWorker(ctx context.Context, t *testing.T, w *worker.Worker) {
	t.Helper()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(sctx)
	})
}
