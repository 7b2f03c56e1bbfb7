package webui

import (
	"bytes"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui/"

// Defaults of Options.
const (
	// SessionTTLDefault is how long a sign-in lasts.
	SessionTTLDefault = 12 * time.Hour
	// PollIntervalDefault is how often a page refreshes its live parts.
	PollIntervalDefault = 3 * time.Second
	// SlowPollFactor slows the refresh of the pages that read many records
	// each time (the overview, a key or field search, a filtered list of
	// suppressed triggers).
	SlowPollFactor = 4
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure the dashboard. Zero values mean the documented
// defaults.
type Options struct {
	// Client reads and acts on the namespace, through its Inspector
	// (required).
	Client *client.Client
	// Token signs in with every right: see and act (cancel and retry runs,
	// release keys). It is the HTTP API's bearer token.
	Token string
	// ReadOnlyToken, when set, signs in to see but not act: no action is
	// offered, and a state-changing request is refused 403. It must differ
	// from Token.
	ReadOnlyToken string
	// Insecure serves without signing in, every visitor with every right,
	// when Token is empty (development only, as the HTTP API's --insecure).
	Insecure bool
	// SecureCookie marks the session cookie Secure even on a plain HTTP
	// request, for a server behind a proxy that terminates TLS. A request
	// that arrives over TLS always gets a Secure cookie.
	SecureCookie bool
	// SessionTTL is how long a sign-in lasts (default SessionTTLDefault).
	SessionTTL time.Duration
	// PollInterval is how often pages refresh their live parts (default
	// PollIntervalDefault).
	PollInterval time.Duration
	// Clock tells the time (default: the wall clock).
	Clock  task.Clock
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.SessionTTL == 0 {
		o.SessionTTL = SessionTTLDefault
	}
	if o.PollInterval == 0 {
		o.PollInterval = PollIntervalDefault
	}
	if o.Clock == nil {
		o.Clock = wallClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func (o Options) validate() error {
	switch {
	case o.Client == nil:
		return errors.New("webui: Options.Client is required")
	case o.Token == "" && !o.Insecure:
		return errors.New("webui: a token is required to sign in (or Insecure, for development only)")
	case o.Token == "" && o.ReadOnlyToken != "":
		return errors.New("webui: a read-only token needs a token beside it: without one, everyone may act")
	case o.ReadOnlyToken != "" && o.ReadOnlyToken == o.Token:
		return errors.New("webui: the read-only token must differ from the token")
	case o.SessionTTL < 0 || o.PollInterval < 0:
		return errors.New("webui: SessionTTL and PollInterval must not be negative")
	}
	return nil
}

// UI is the dashboard's HTTP handler, to be served under Prefix. It is safe
// for concurrent use.
type UI struct {
	opts     Options
	in       *client.Inspector
	log      *slog.Logger
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
}

// New validates opts and builds the dashboard.
func New(opts Options) (*UI, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	key, err := sessionKey(opts.Token, opts.ReadOnlyToken, rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("webui: session key: %w", err)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	u := &UI{
		opts: opts, in: opts.Client.Inspector(), log: opts.Logger, pages: pages,
		sessions: &sessions{key: key, ttl: opts.SessionTTL, clock: opts.Clock},
	}
	u.mux = u.routes()
	if opts.Token == "" {
		u.log.Warn("taskq: the dashboard serves without signing in (insecure development mode)")
	}
	return u, nil
}

func (u *UI) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /ui/login", u.loginPage)
	mux.HandleFunc("POST /ui/login", u.login)
	mux.HandleFunc("POST /ui/logout", u.act(u.logout, false))
	mux.HandleFunc("GET /ui/{$}", u.see(u.overview))
	mux.HandleFunc("GET /ui/tasks/{name}", u.see(u.taskPage))
	mux.HandleFunc("GET /ui/runs", u.see(u.runs))
	mux.HandleFunc("GET /ui/runs/{id}", u.see(u.run))
	mux.HandleFunc("GET /ui/runs/{id}/cancel", u.see(u.confirmCancel))
	mux.HandleFunc("POST /ui/runs/{id}/cancel", u.act(u.cancel, true))
	mux.HandleFunc("GET /ui/runs/{id}/retry", u.see(u.confirmRetry))
	mux.HandleFunc("POST /ui/runs/{id}/retry", u.act(u.retry, true))
	mux.HandleFunc("GET /ui/suppressed", u.see(u.suppressed))
	mux.HandleFunc("GET /ui/keys", u.see(u.keys))
	mux.HandleFunc("GET /ui/keys/release", u.see(u.confirmRelease))
	mux.HandleFunc("POST /ui/keys/release", u.act(u.release, true))
	mux.HandleFunc("GET /ui/events", u.see(u.events))
	mux.HandleFunc("GET /ui/events/{id}", u.see(u.event))
	mux.HandleFunc("GET /ui/workers", u.see(u.workers))
	mux.HandleFunc("GET /ui/schedules", u.see(u.schedules))
	mux.HandleFunc("/ui/", func(w http.ResponseWriter, r *http.Request) {
		u.fail(w, r, nil, http.StatusNotFound, "There is no such page.")
	})
	return mux
}

// ServeHTTP serves a request under Prefix.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// No script but the dashboard's own file, no inline script or style,
	// no frame: an injected tag could not run even if it escaped.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: with no-referrer a browser sends
	// "Origin: null" on a form POST, which sameOrigin could not check.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	if !strings.HasPrefix(r.URL.Path, "/ui/static/") {
		h.Set("Cache-Control", "no-store")
	}
	u.mux.ServeHTTP(w, r)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	Session  *session
	CSRF     string
	Insecure bool
	// Poll is the URL of the page's live fragment ("" for a page that
	// does not refresh) and PollMs its interval; SlowPoll makes it
	// SlowPollFactor times the PollInterval, for pages that read many runs.
	Poll     string
	PollMs   int64
	SlowPoll bool
	Now      time.Time
	Flash    string
	Error    string
	// ErrorLink, with Error, points to what the error names (the run that
	// holds a key, the run that already retried another).
	ErrorLink *link
	Data      any
}

// link is a link a page offers, built by the server: Href is a dashboard
// path made with url.PathEscape or url.Values, Text what it says.
type link struct {
	Href, Text string
}

// fragment reports whether the request asks only for a page's live part.
func fragment(r *http.Request) bool { return r.URL.Query().Get("fragment") == "1" }

// render writes page name for the request: the whole page, or only its
// "live" template when the request is a poll of the fragment.
func (u *UI) render(w http.ResponseWriter, r *http.Request, s *session, status int, name string, v *view) {
	t, ok := u.pages[name]
	if !ok {
		panic("webui: no page " + name)
	}
	v.Session, v.Insecure, v.Now = s, u.opts.Token == "", u.opts.Clock.Now()
	if s != nil {
		v.CSRF = u.sessions.csrf(s)
	}
	if v.Poll != "" {
		v.PollMs = u.opts.PollInterval.Milliseconds()
		if v.SlowPoll {
			v.PollMs *= SlowPollFactor
		}
	}
	which := "page"
	if fragment(r) {
		which = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, which, v); err != nil {
		u.log.Error("taskq: dashboard template", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page (or fragment) with message.
func (u *UI) fail(w http.ResponseWriter, r *http.Request, s *session, status int, message string) {
	u.render(w, r, s, status, "error", &view{Title: http.StatusText(status), Error: message})
}

// failLink renders an error page (or fragment) with message and a link to
// what it names.
func (u *UI) failLink(w http.ResponseWriter, r *http.Request, s *session, status int, message string, l *link) {
	u.render(w, r, s, status, "error", &view{Title: http.StatusText(status), Error: message, ErrorLink: l})
}

// failErr renders err, as a 503 when Redis did not answer.
func (u *UI) failErr(w http.ResponseWriter, r *http.Request, s *session, what string, err error) {
	status := http.StatusInternalServerError
	var ue *client.UnavailableError
	if errors.As(err, &ue) {
		status = http.StatusServiceUnavailable
	} else if errors.Is(err, client.ErrInvalidCursor) || errors.Is(err, client.ErrInvalidListOption) {
		status = http.StatusBadRequest
	}
	if status >= 500 {
		u.log.Warn("taskq: dashboard read failed", "what", what, "err", err)
	}
	u.fail(w, r, s, status, what+": "+err.Error())
}
