package webui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
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
// cannot reveal one, and changing either token ends every session. No
// state is kept on the server, so several servers given the same tokens
// accept each other's sessions.
type session struct {
	Role   string
	Issued time.Time
	nonce  string
}

// CanAct reports whether the session may change anything (not read-only).
func (s *session) CanAct() bool { return s.Role == roleAdmin }

// ReadOnly reports whether the session signed in with the read-only token.
func (s *session) ReadOnly() bool { return s.Role == roleReader }

// sessions issues and checks session cookies and CSRF tokens.
type sessions struct {
	key   []byte
	ttl   time.Duration
	clock task.Clock
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
	s := &session{Role: role, Issued: ss.clock.Now().Truncate(time.Second), nonce: hex.EncodeToString(n)}
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
	return &session{Role: f[1], Issued: issued, nonce: f[3]}
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

// sessionOf returns the request's session, or nil.
func (u *UI) sessionOf(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	return u.sessions.check(c.Value)
}

func (u *UI) setCookie(w http.ResponseWriter, r *http.Request, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: value, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || u.opts.SecureCookie,
	})
}

// startSession signs the visitor in with role.
func (u *UI) startSession(w http.ResponseWriter, r *http.Request, role string) (*session, error) {
	s, value, err := u.sessions.issue(role, rand.Reader)
	if err != nil {
		return nil, err
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

// handler is a page or action given the visitor's session.
type handler func(w http.ResponseWriter, r *http.Request, s *session)

// see serves a page to a signed-in visitor; others are sent to sign in (a
// poll of a fragment is answered 401, so that the script can follow).
func (u *UI) see(h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := u.sessionOf(r)
		if s == nil && u.insecure() {
			var err error
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
		s := u.sessionOf(r)
		if s == nil {
			u.fail(w, r, nil, http.StatusUnauthorized, "You are not signed in: sign in and try again.")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if err := r.ParseForm(); err != nil {
			u.fail(w, r, s, http.StatusBadRequest, "The form could not be read.")
			return
		}
		if !sameOrigin(r) || !u.sessions.checkCSRF(s, r.PostForm.Get("csrf")) {
			u.fail(w, r, s, http.StatusForbidden, "This request did not come from a dashboard form of this session (its CSRF token is missing or wrong): reload the page and try again.")
			return
		}
		if admin && !s.CanAct() {
			u.fail(w, r, s, http.StatusForbidden, "This session can see but not act: its token lacks the operate scope.")
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

func (u *UI) loginPage(w http.ResponseWriter, r *http.Request) {
	if s := u.sessionOf(r); s != nil || u.insecure() {
		http.Redirect(w, r, localNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		return
	}
	u.render(w, r, nil, http.StatusOK, "login", &view{Title: "Sign in",
		Data: loginData{Next: localNext(r.URL.Query().Get("next")), ReadOnlyTokens: u.opts.ReadOnlyToken != "" || u.opts.Tokens != nil}})
}

func (u *UI) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil || !sameOrigin(r) {
		u.fail(w, r, nil, http.StatusForbidden, "The sign-in form could not be read or did not come from this dashboard.")
		return
	}
	next := localNext(r.PostForm.Get("next"))
	role := roleAdmin
	if !u.insecure() {
		role = u.tokenRole(r.PostForm.Get("token"))
	}
	if role == "" {
		u.log.Info("taskq: dashboard sign-in refused", "remote", r.RemoteAddr)
		u.render(w, r, nil, http.StatusUnauthorized, "login", &view{Title: "Sign in", Error: "That token is not valid.",
			Data: loginData{Next: next, ReadOnlyTokens: u.opts.ReadOnlyToken != "" || u.opts.Tokens != nil}})
		return
	}
	if _, err := u.startSession(w, r, role); err != nil {
		u.fail(w, r, nil, http.StatusInternalServerError, "Could not start a session.")
		return
	}
	u.log.Info("taskq: dashboard sign-in", "role", role, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (u *UI) logout(w http.ResponseWriter, r *http.Request, _ *session) {
	u.setCookie(w, r, "", -1)
	http.Redirect(w, r, "/ui/login", http.StatusSeeOther)
}
