package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/auth"
)

// route is one endpoint. The OpenAPI document lists exactly these, which a
// test checks.
type route struct {
	method string
	// pattern is the route's path: literal segments and wildcards, {name}
	// for one segment and {name...} for one or more (the idempotency key,
	// which may contain slashes). A {name...} may be followed by literal
	// segments (/keys/{key...}/signal): the key is what lies between.
	pattern string
	open    bool // served without a token
	// scope is what the request's token must hold (see internal/auth);
	// every route that is neither open nor signed declares one.
	scope auth.Scope
	// signed routes are served without a token: the request carries its
	// sender's signature instead (webhooks).
	signed  bool
	handler http.HandlerFunc
	segs    []string // pattern split at "/"
}

func (s *Server) routeTable() []route {
	routes := []route{
		{method: http.MethodPost, pattern: "/api/v1/events", scope: auth.ScopeTrigger, handler: s.pushEvents},
		{method: http.MethodGet, pattern: "/api/v1/events/{id}", scope: auth.ScopeRead, handler: s.getEvent},
		{method: http.MethodPost, pattern: "/api/v1/tasks/{task}/runs", scope: auth.ScopeTrigger, handler: s.triggerRuns},
		{method: http.MethodGet, pattern: "/api/v1/tasks", scope: auth.ScopeRead, handler: s.listTasks},
		{method: http.MethodPost, pattern: "/api/v1/tasks/{task}/pause", scope: auth.ScopeOperate, handler: s.pauseTask},
		{method: http.MethodPost, pattern: "/api/v1/tasks/{task}/resume", scope: auth.ScopeOperate, handler: s.resumeTask},
		{method: http.MethodGet, pattern: "/api/v1/runs", scope: auth.ScopeRead, handler: s.listRuns},
		{method: http.MethodGet, pattern: "/api/v1/keys", scope: auth.ScopeRead, handler: s.listKeys},
		{method: http.MethodGet, pattern: "/api/v1/events", scope: auth.ScopeRead, handler: s.listEvents},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}", scope: auth.ScopeRead, handler: s.getRun},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/result", scope: auth.ScopeRead, handler: s.getResult},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/attempts", scope: auth.ScopeRead, handler: s.getAttempts},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/signals", scope: auth.ScopeRead, handler: s.getSignals},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/steps", scope: auth.ScopeRead, handler: s.getSteps},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/cancel", scope: auth.ScopeOperate, handler: s.cancelRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/retry", scope: auth.ScopeOperate, handler: s.retryRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/reschedule", scope: auth.ScopeOperate, handler: s.rescheduleRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/cancel", scope: auth.ScopeOperate, handler: s.bulkCancel},
		{method: http.MethodPost, pattern: "/api/v1/runs/retry", scope: auth.ScopeOperate, handler: s.bulkRetry},
		{method: http.MethodPost, pattern: "/api/v1/events/{id}/replay", scope: auth.ScopeOperate, handler: s.replayEvent},
		{method: http.MethodDelete, pattern: "/api/v1/keys/{key...}", scope: auth.ScopeOperate, handler: s.releaseKey},
		{method: http.MethodGet, pattern: "/api/v1/keys/{key...}", scope: auth.ScopeRead, handler: s.getKey},
		{method: http.MethodPost, pattern: "/api/v1/keys/{key...}/signal", scope: auth.ScopeOperate, handler: s.signalKey},
		{method: http.MethodGet, pattern: "/api/v1/workers", scope: auth.ScopeRead, handler: s.listWorkers},
		{method: http.MethodGet, pattern: "/api/v1/suppressed", scope: auth.ScopeRead, handler: s.listSuppressed},
		{method: http.MethodGet, pattern: "/api/v1/stats", scope: auth.ScopeRead, handler: s.getStats},
		{method: http.MethodGet, pattern: "/api/v1/queues", scope: auth.ScopeRead, handler: s.listQueues},
		{method: http.MethodGet, pattern: "/api/v1/ratelimits", scope: auth.ScopeRead, handler: s.listRateLimits},
		{method: http.MethodGet, pattern: "/api/v1/schedules", scope: auth.ScopeRead, handler: s.listSchedules},
		{method: http.MethodPost, pattern: "/api/v1/schedules", scope: auth.ScopeOperate, handler: s.createSchedule},
		{method: http.MethodGet, pattern: "/api/v1/schedules/{name}", scope: auth.ScopeRead, handler: s.getSchedule},
		{method: http.MethodPut, pattern: "/api/v1/schedules/{name}", scope: auth.ScopeOperate, handler: s.putSchedule},
		{method: http.MethodDelete, pattern: "/api/v1/schedules/{name}", scope: auth.ScopeOperate, handler: s.deleteSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/pause", scope: auth.ScopeOperate, handler: s.pauseSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/resume", scope: auth.ScopeOperate, handler: s.resumeSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/trigger", scope: auth.ScopeOperate, handler: s.triggerSchedule},
		{method: http.MethodPost, pattern: "/api/v1/webhooks/{source}", signed: true, handler: s.receiveWebhook},
		{method: http.MethodGet, pattern: "/healthz", open: true, handler: s.healthz},
		{method: http.MethodGet, pattern: "/readyz", open: true, handler: s.readyz},
		{method: http.MethodGet, pattern: "/metrics", scope: auth.ScopeRead, handler: s.serveMetrics},
	}
	for i := range routes {
		routes[i].segs = strings.Split(routes[i].pattern, "/")
	}
	return routes
}

// match reports whether path segments segs (of the escaped path, split at
// "/") fit the route, and returns its wildcards' values, percent-decoded.
// Nothing is cleaned: "//", "." and ".." are kept as they are, so a key
// such as "https://shop.example/evt/../1" reaches the handler unchanged.
func (rt *route) match(segs []string) (names, values []string, ok bool) {
	greedy := -1
	for i, p := range rt.segs {
		if strings.HasSuffix(p, "...}") {
			greedy = i
		}
	}
	if greedy < 0 && len(segs) != len(rt.segs) || greedy >= 0 && len(segs) < len(rt.segs) {
		return nil, nil, false
	}
	suffix := len(rt.segs) - greedy - 1 // literal segments after the greedy wildcard
	for i, p := range rt.segs {
		seg := ""
		switch {
		case greedy >= 0 && i == greedy:
			seg = strings.Join(segs[i:len(segs)-suffix], "/")
		case greedy >= 0 && i > greedy:
			seg = segs[len(segs)-(len(rt.segs)-i)]
		default:
			seg = segs[i]
		}
		if !strings.HasPrefix(p, "{") {
			if seg != p {
				return nil, nil, false
			}
			continue
		}
		v, err := url.PathUnescape(seg)
		if err != nil {
			return nil, nil, false
		}
		names = append(names, strings.TrimSuffix(strings.Trim(p, "{}"), "..."))
		values = append(values, v)
	}
	return names, values, true
}

// dispatch routes a request by its escaped path, so that ServeMux's path
// cleaning (a redirect with an HTML body for "//" or dot segments) never
// applies: unknown routes and methods are answered in the API's JSON error
// shape, and an empty path parameter is a 400 naming it.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	segs := strings.Split(r.URL.EscapedPath(), "/")
	var allow []string
	for i := range s.routes {
		rt := &s.routes[i]
		names, values, ok := rt.match(segs)
		if !ok {
			continue
		}
		if rt.method != r.Method {
			allow = append(allow, rt.method)
			continue
		}
		r.Pattern = rt.method + " " + rt.pattern
		if !s.allowed(w, r, rt) {
			return
		}
		if e := checkURLText(r); e != nil {
			writeError(w, e)
			return
		}
		for j, name := range names {
			if values[j] == "" {
				e := newError(http.StatusBadRequest, CodeInvalidParameter, "path parameter %q is empty: %s %s", name, rt.method, rt.pattern)
				e.Field = name
				writeError(w, e)
				return
			}
			r.SetPathValue(name, values[j])
		}
		rt.handler(w, r)
		return
	}
	if len(allow) > 0 {
		slices.Sort(allow)
		allow = slices.Compact(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"method %s is not allowed on %s; allowed: %s", clip(r.Method), clip(r.URL.Path), strings.Join(allow, ", ")))
		return
	}
	writeError(w, newError(http.StatusNotFound, CodeNotFound, "no route %s %s", clip(r.Method), clip(r.URL.Path)))
}

// needsToken reports whether a path is protected: everything under /api/
// (known route or not, so probing reveals nothing) and /metrics, but the
// signed webhooks, whose senders sign their requests instead.
func needsToken(path string) bool {
	if strings.HasPrefix(path, webhookPrefix) {
		return false
	}
	return strings.HasPrefix(path, "/api/") || path == "/api" || path == "/metrics"
}

// webhookPrefix starts the path of every signed webhook.
const webhookPrefix = "/api/v1/webhooks/"

// requestInfo is what the request log and the audit log learn about a
// request as it passes the handlers: who sent it.
type requestInfo struct {
	// who names the token behind the request ("" before authentication),
	// or the webhook source ("webhook:<source>").
	who string
	// id is the identity of the request's token (nil: none, or insecure
	// mode).
	id *auth.Identity
}

type requestInfoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if ri, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
		return ri
	}
	return &requestInfo{}
}

// authenticate requires "Authorization: Bearer <token>" on protected
// paths, a token of the keyring (see auth.Keyring.Authenticate: hashed,
// compared in constant time), and passes its identity on to dispatch,
// which checks the route's scope.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.keys == nil || !needsToken(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		token = strings.TrimSpace(token)
		if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskq"`)
			writeError(w, newError(http.StatusUnauthorized, CodeUnauthorized,
				"missing bearer token: send the header Authorization: Bearer <token>"))
			return
		}
		id, ok := s.keys.Authenticate(token)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskq", error="invalid_token"`)
			writeError(w, newError(http.StatusUnauthorized, CodeUnauthorized, "the bearer token is not valid"))
			return
		}
		ri := infoOf(r)
		ri.who, ri.id = id.Name, &id
		next.ServeHTTP(w, r)
	})
}

// allowed checks the request's token against the route's scope, and
// answers 403 naming the scope it lacks. A route that declares no scope
// needs admin, so that a route added without one is closed, not open.
func (s *Server) allowed(w http.ResponseWriter, r *http.Request, rt *route) bool {
	if rt.open || rt.signed || s.keys == nil {
		return true
	}
	need := rt.scope
	if need == "" {
		need = auth.ScopeAdmin
	}
	id := infoOf(r).id
	if id == nil {
		id = &auth.Identity{}
	}
	if id.Has(need) {
		return true
	}
	e := newError(http.StatusForbidden, CodeForbidden, "token %s lacks the scope %s that %s %s needs",
		quote(id.Name), quote(string(need)), rt.method, rt.pattern)
	writeError(w, e)
	return false
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				s.log.Error("taskq: HTTP handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, newError(http.StatusInternalServerError, CodeInternal, "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// recorder remembers the status and size of an answer for the request log.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (rec *recorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// logRequests logs every request with slog and counts it for /metrics,
// labelled by route pattern so the label set stays bounded.
func (s *Server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &recorder{ResponseWriter: w}
		ri := &requestInfo{}
		r = r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, ri))
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		route := r.Pattern // set by dispatch on this request
		if route == "" {
			route = "unmatched"
		}
		d := time.Since(start)
		s.metrics.requests.WithLabelValues(route, strconv.Itoa(rec.status)).Inc()
		level := slog.LevelInfo
		switch {
		case rec.status >= 500:
			level = slog.LevelError
		case route == "GET /healthz" || route == "GET /readyz" || route == "GET /metrics":
			level = slog.LevelDebug // probes and scrapes would drown the rest
		}
		s.log.Log(r.Context(), level, "http request",
			"method", r.Method, "path", r.URL.Path, "route", route, "status", rec.status,
			"bytes", rec.bytes, "duration_ms", float64(d.Microseconds())/1000, "remote", r.RemoteAddr, "token", ri.who)
		if changes(r.Method) && route != "unmatched" && !strings.HasPrefix(route, "/ui/") {
			s.audit(r, route, rec.status, ri.who)
		}
	})
}

// changes reports whether a request of method may change state.
func changes(method string) bool {
	return method != http.MethodGet && method != http.MethodHead && method != http.MethodOptions
}

// audit records a state-changing request: who sent it (the token's name,
// never its value; "webhook:<source>" for a webhook; "" in insecure mode),
// what and with which answer, in the log and in
// taskq_http_changes_total.
func (s *Server) audit(r *http.Request, route string, status int, who string) {
	s.metrics.changes.WithLabelValues(route, strconv.Itoa(status), who).Inc()
	s.log.Info("taskq: audit", "token", who, "method", r.Method, "route", route, "path", r.URL.Path,
		"status", status, "remote", r.RemoteAddr)
}

// knownCaller reports whether an open route's request carries a token of
// read scope (or the server has none), so that it may learn details.
func (s *Server) knownCaller(r *http.Request) bool {
	if s.keys == nil {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	id, ok := s.keys.Authenticate(strings.TrimSpace(token))
	return ok && id.Has(auth.ScopeRead)
}
