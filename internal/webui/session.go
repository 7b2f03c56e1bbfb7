package webui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// CookieName is the session cookie's name.
const CookieName = "taskq_session"

// maxFormBytes bounds a form the dashboard reads (a key, a token, a CSRF
// token).
const maxFormBytes = 64 << 10

// Roles of a session.
const (
	roleAdmin  = "admin"
	roleReader = "read-only"
)

// session is a signed-in visitor. Its cookie holds the role, the time of
// the sign-in and a random nonce, signed with an HMAC whose key is derived
// from the tokens: never a token, so a page (or a stolen cookie jar)
// cannot reveal one, and changing either token ends every session. Several
// servers given the same tokens accept each other's sessions. A signed-in
// session is also recorded in Redis (SessionStore) under its ID, so that
// signing out ends it on every server, not only in the browser.
type session struct {
	Role   string
	Issued time.Time
	// ID names the session in the audit log and in Redis: a hash of the
	// nonce, which tells nothing about the cookie or the CSRF token.
	ID    string
	nonce string
}

// CanAct reports whether the session may change anything (not read-only).
func (s *session) CanAct() bool { return s.Role == roleAdmin }

// ReadOnly reports whether the session signed in with the read-only token.
func (s *session) ReadOnly() bool { return s.Role == roleReader }

// Expires is when the session ends unless signed out before.
func (s *session) expires(ttl time.Duration) time.Time { return s.Issued.Add(ttl) }

// sessionID is the ID of the session with nonce.
func sessionID(nonce string) string {
	h := sha256.Sum256([]byte("taskq dashboard session id\x00" + nonce))
	return hex.EncodeToString(h[:8])
}

// SessionStore keeps the dashboard's signed-in sessions on the server:
// a session is live while its record is (see redisstore's UISession
// methods, which implement it on the namespace's Redis, shared by every
// server).
type SessionStore interface {
	// UISessionSave records session id as live for ttl.
	UISessionSave(ctx context.Context, id string, ttl time.Duration) error
	// UISessionLive reports whether session id is live.
	UISessionLive(ctx context.Context, id string) (bool, error)
	// UISessionDelete ends session id.
	UISessionDelete(ctx context.Context, id string) error
	// UISessionEndAll ends every session recorded so far.
	UISessionEndAll(ctx context.Context) (int64, error)
}

// sessionStoreTimeout bounds each call to the SessionStore.
const sessionStoreTimeout = 5 * time.Second

// sessions issues and checks session cookies and CSRF tokens.
type sessions struct {
	key   []byte
	ttl   time.Duration
	clock task.Clock
	// store records the sessions signed in; nil without a token (insecure
	// mode), where a session is never signed out.
	store SessionStore
}

// sessionKey derives the key that signs sessions from the tokens, so that
// every server given the same tokens shares it. Without a token (insecure
// mode) it is random: sessions last as long as the process.
func sessionKey(token, readOnly string, random io.Reader) ([]byte, error) {
	if token == "" {
		k := make([]byte, 32)
		_, err := io.ReadFull(random, k)
		return k, err
	}
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("taskq dashboard session key\x00"))
	m.Write([]byte(readOnly))
	return m.Sum(nil), nil
}

func (ss *sessions) mac(parts ...string) []byte {
	m := hmac.New(sha256.New, ss.key)
	m.Write([]byte(strings.Join(parts, "\x00")))
	return m.Sum(nil)
}

// issue makes a new session of role and its cookie's value.
func (ss *sessions) issue(role string, random io.Reader) (*session, string, error) {
	n := make([]byte, 16)
	if _, err := io.ReadFull(random, n); err != nil {
		return nil, "", err
	}
	nonce := hex.EncodeToString(n)
	s := &session{Role: role, Issued: ss.clock.Now().Truncate(time.Second), ID: sessionID(nonce), nonce: nonce}
	payload := "v1." + s.Role + "." + strconv.FormatInt(s.Issued.Unix(), 10) + "." + s.nonce
	return s, payload + "." + base64.RawURLEncoding.EncodeToString(ss.mac("session", payload)), nil
}

// check returns the session a cookie value names, or nil when the value
// is not one this server signed or the session has expired.
func (ss *sessions) check(value string) *session {
	i := strings.LastIndexByte(value, '.')
	if i < 0 {
		return nil
	}
	payload, sig := value[:i], value[i+1:]
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, ss.mac("session", payload)) {
		return nil
	}
	f := strings.Split(payload, ".")
	if len(f) != 4 || f[0] != "v1" || (f[1] != roleAdmin && f[1] != roleReader) {
		return nil
	}
	unix, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return nil
	}
	issued := time.Unix(unix, 0)
	if age := ss.clock.Now().Sub(issued); age > ss.ttl || age < -time.Minute {
		return nil
	}
	return &session{Role: f[1], Issued: issued, ID: sessionID(f[3]), nonce: f[3]}
}

// csrf is the session's CSRF token, which every form that changes
// something carries in a hidden field.
func (ss *sessions) csrf(s *session) string {
	return base64.RawURLEncoding.EncodeToString(ss.mac("csrf", s.nonce))
}

func (ss *sessions) checkCSRF(s *session, token string) bool {
	got, err := base64.RawURLEncoding.DecodeString(token)
	return err == nil && token != "" && hmac.Equal(got, ss.mac("csrf", s.nonce))
}

// errSessionStore is why a session could not be checked or recorded: the
// SessionStore (Redis) failed.
var errSessionStore = errors.New("the session store did not answer")

// sessionOf returns the request's session: nil when the request has none
// or its session has ended (expired, signed out), and an error when the
// session store could not say.
func (u *UI) sessionOf(r *http.Request) (*session, error) {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil, nil
	}
	s := u.sessions.check(c.Value)
	if s == nil || u.sessions.store == nil {
		return s, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionStoreTimeout)
	defer cancel()
	live, err := u.sessions.store.UISessionLive(ctx, s.ID)
	if err != nil {
		u.log.Warn("taskq: dashboard session check failed", "session", s.ID, "err", err)
		return nil, fmt.Errorf("%w: %w", errSessionStore, err)
	}
	if !live {
		return nil, nil
	}
	return s, nil
}

// failSession answers a request whose session could not be checked.
func (u *UI) failSession(w http.ResponseWriter, r *http.Request, err error) {
	u.fail(w, r, nil, http.StatusServiceUnavailable, "Could not check your session: "+err.Error()+". Try again when Redis answers.")
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || u.opts.SecureCookie,
	})
}

// startSession signs the visitor in with role, recording the session in
// the session store.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request, role string) (*session, error) {
	s, value, err := u.sessions.issue(role, rand.Reader)
	if err != nil {
		return nil, err
	}
	if u.sessions.store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), sessionStoreTimeout)
		defer cancel()
		if err := u.sessions.store.UISessionSave(ctx, s.ID, u.opts.SessionTTL); err != nil {
			return nil, fmt.Errorf("%w: %w", errSessionStore, err)
		}
	}
	u.setCookie(w, r, value, int(u.opts.SessionTTL/time.Second))
	return s, nil
}

// tokenRole returns the role the token signs in with, or "". Both sides
// are hashed before the constant-time comparison, so neither a token's
// content nor its length leaks through timing.
func (u *UI) tokenRole(token string) string {
	if u.opts.Tokens != nil {
		return u.scopedRole(token)
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	admin := sha256.Sum256([]byte(u.opts.Token))
	reader := sha256.Sum256([]byte(u.opts.ReadOnlyToken))
	switch {
	case token == "":
		return ""
	case subtle.ConstantTimeCompare(got[:], admin[:]) == 1:
		return roleAdmin
	case u.opts.ReadOnlyToken != "" && subtle.ConstantTimeCompare(got[:], reader[:]) == 1:
		return roleReader
	}
	return ""
}

// sameOrigin reports whether a state-changing request comes from the
// dashboard's own pages, by the headers browsers set on every POST:
// Sec-Fetch-Site when the browser sends it (every current one does), else
// Origin. A request with neither (not from a browser) is let through to
// the CSRF check.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		ou, err := url.Parse(o)
		return err == nil && ou.Host == r.Host
	}
	return true
}

// Refusals of a state-changing request, each saying what was wrong.
const (
	refusedOrigin   = "This request came from another site (its Origin or Sec-Fetch-Site header is not this dashboard's), so it was refused: use the dashboard's own pages."
	refusedCSRF     = "This request did not come from a dashboard form of this session (its CSRF token is missing or wrong): reload the page and try again."
	refusedReadOnly = "This session can see but not act: its token lacks the operate scope."
)

// handler is a page or action given the visitor's session.
type handler func(w http.ResponseWriter, r *http.Request, s *session)

// see serves a page to a signed-in visitor; others are sent to sign in (a
// poll of a fragment is answered 401, so that the script can follow).
func (u *UI) see(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := u.sessionOf(r)
		if err != nil {
			u.failSession(w, r, err)
			return
		}
		if s == nil && u.insecure() {
			if s, err = u.startSession(w, r, roleAdmin); err != nil {
				u.fail(w, r, nil, http.StatusInternalServerError, "Could not start a session.")
				return
			}
		}
		if s == nil {
			if fragment(r) {
				u.fail(w, r, nil, http.StatusUnauthorized, "Your session has ended: sign in again.")
				return
			}
			http.Redirect(w, r, "/ui/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		h(w, r, s)
	}
}

// act serves a state-changing request: from a signed-in session, from the
// dashboard's own origin, carrying the session's CSRF token, and, when
// admin is set, from a session that may act.
func (u *UI) act(h handler, admin bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, err := u.sessionOf(r)
		if err != nil {
			u.failSession(w, r, err)
			return
		}
		if s == nil {
			u.fail(w, r, nil, http.StatusUnauthorized, "You are not signed in: sign in and try again.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			u.fail(w, r, s, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !sameOrigin(r) {
			u.fail(w, r, s, http.StatusForbidden, refusedOrigin)
			return
		}
		if !u.sessions.checkCSRF(s, r.PostForm.Get("csrf")) {
			u.fail(w, r, s, http.StatusForbidden, refusedCSRF)
			return
		}
		if admin && !s.CanAct() {
			u.fail(w, r, s, http.StatusForbidden, refusedReadOnly)
			return
		}
		h(w, r, s)
	}
}

// localNext returns where to go after signing in: a dashboard path, never
// another site.
func localNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return Prefix
	}
	return next
}

type loginData struct {
	Next           string
	ReadOnlyTokens bool
}

// signedOut is what the sign-in page says after a sign-out, chosen from
// fixed texts.
func signedOut(r *http.Request) string {
	switch r.URL.Query().Get("done") {
	case "signed-out":
		return "You signed out: this session has ended on the server, in every copy of its cookie."
	case "signed-out-everywhere":
		return "Every session was signed out, on every server sharing this Redis."
	}
	return ""
}

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	s, err := u.sessionOf(r)
	if err != nil {
		u.failSession(w, r, err)
		return
	}
	if s != nil || u.insecure() {
		http.Redirect(w, r, localNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	u.render(w, r, nil, http.StatusOK, "login", &view{Title: "Sign in", Flash: signedOut(r),
		Data: loginData{Next: localNext(r.URL.Query().Get("next")), ReadOnlyTokens: u.opts.ReadOnlyToken != "" || u.opts.Tokens != nil}})
}

func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		u.fail(w, r, nil, http.StatusBadRequest, "The sign-in form could not be read.")
		return
	}
	if !sameOrigin(r) {
		u.fail(w, r, nil, http.StatusForbidden, refusedOrigin)
		return
	}
	next := localNext(r.PostForm.Get("next"))
	addr := clientAddr(r)
	// A client over its budget of failed sign-ins is not even checked,
	// so that the answer tells nothing about the token it sent.
	if wait := u.throttle.wait(addr); wait > 0 {
		secs := int((wait + time.Second - 1) / time.Second)
		u.log.Warn("taskq: dashboard sign-in throttled", "remote", addr, "retry_after_s", secs)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		u.render(w, r, nil, http.StatusTooManyRequests, "login", &view{Title: "Sign in",
			Error: "Too many failed sign-ins from your address (" + strconv.Itoa(signInFailuresMax) + " in " + dur(signInWindow) + "): try again in " + dur(time.Duration(secs)*time.Second) + ".",
			Data:  loginData{Next: next, ReadOnlyTokens: u.opts.ReadOnlyToken != "" || u.opts.Tokens != nil}})
		return
	}
	role := roleAdmin
	if !u.insecure() {
		role = u.tokenRole(r.PostForm.Get("token"))
	}
	if role == "" {
		u.throttle.failed(addr)
		u.log.Info("taskq: dashboard sign-in refused", "remote", addr)
		u.render(w, r, nil, http.StatusUnauthorized, "login", &view{Title: "Sign in", Error: "That token is not valid.",
			Data: loginData{Next: next, ReadOnlyTokens: u.opts.ReadOnlyToken != "" || u.opts.Tokens != nil}})
		return
	}
	s, err := u.startSession(w, r, role)
	if errors.Is(err, errSessionStore) {
		u.log.Warn("taskq: dashboard sign-in failed", "remote", addr, "err", err)
		u.fail(w, r, nil, http.StatusServiceUnavailable, "Could not record your session: "+err.Error()+". Try again when Redis answers.")
		return
	}
	if err != nil {
		u.fail(w, r, nil, http.StatusInternalServerError, "Could not start a session.")
		return
	}
	u.log.Info("taskq: dashboard sign-in", "role", role, "session", s.ID, "remote", addr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout ends the session: on the server, so that a copy of its cookie is
// refused too, and in the browser.
func (u *UI) logout(w http.ResponseWriter, r *http.Request, s *session) {
	if u.sessions.store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), sessionStoreTimeout)
		defer cancel()
		if err := u.sessions.store.UISessionDelete(ctx, s.ID); err != nil {
			u.log.Warn("taskq: dashboard sign-out failed", "session", s.ID, "err", err)
			u.fail(w, r, s, http.StatusServiceUnavailable, "Could not end your session on the server: "+err.Error()+". Try again when Redis answers.")
			return
		}
	}
	u.log.Info("taskq: dashboard sign-out", "session", s.ID, "remote", clientAddr(r))
	u.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/ui/login?done=signed-out", http.StatusSeeOther)
}

// logoutLink signs out by a link, for the sessions that are shown no form
// (read-only): a GET from the dashboard's own pages carrying the
// session's CSRF token in its query. The session cookie is SameSite=Strict
// besides, so another site cannot end a session this way.
func (u *UI) logoutLink(w http.ResponseWriter, r *http.Request) {
	s, err := u.sessionOf(r)
	if err != nil {
		u.failSession(w, r, err)
		return
	}
	if s == nil {
		http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
		return
	}
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" || r.Header.Get("Sec-Fetch-Site") == "same-site" {
		u.fail(w, r, s, http.StatusForbidden, refusedOrigin)
		return
	}
	if !u.sessions.checkCSRF(s, r.URL.Query().Get("csrf")) {
		u.fail(w, r, s, http.StatusForbidden, refusedCSRF)
		return
	}
	u.logout(w, r, s)
}

// logoutEverywhere ends every session, on every server sharing Redis, this
// one included.
func (u *UI) logoutEverywhere(w http.ResponseWriter, r *http.Request, s *session) {
	if u.sessions.store == nil {
		u.fail(w, r, s, http.StatusBadRequest, "This dashboard serves without signing in: there is no session to end.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), sessionStoreTimeout)
	defer cancel()
	if _, err := u.sessions.store.UISessionEndAll(ctx); err != nil {
		u.log.Warn("taskq: dashboard sign-out everywhere failed", "session", s.ID, "err", err)
		u.fail(w, r, s, http.StatusServiceUnavailable, "Could not end the sessions: "+err.Error()+". Try again when Redis answers.")
		return
	}
	u.log.Info("taskq: dashboard sign-out everywhere", "session", s.ID, "remote", clientAddr(r))
	u.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/ui/login?done=signed-out-everywhere", http.StatusSeeOther)
}

// sessionData is the session page.
type sessionData struct {
	Expires time.Time
}

// sessionPage shows the visitor's session and the ways to end it.
func (u *UI) sessionPage(w http.ResponseWriter, r *http.Request, s *session) {
	u.render(w, r, s, http.StatusOK, "session", &view{Title: "Your session", Nav: "session",
		Data: sessionData{Expires: s.expires(u.opts.SessionTTL)}})
}
