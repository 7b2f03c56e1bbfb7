package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
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
	handler http.HandlerFunc
	segs    []string // pattern split at "/"
}

func (s *Server) routeTable() []route {
	routes := []route{
		{method: http.MethodPost, pattern: "/api/v1/events", handler: s.pushEvents},
		{method: http.MethodGet, pattern: "/api/v1/events/{id}", handler: s.getEvent},
		{method: http.MethodPost, pattern: "/api/v1/tasks/{task}/runs", handler: s.triggerRuns},
		{method: http.MethodGet, pattern: "/api/v1/tasks", handler: s.listTasks},
		{method: http.MethodGet, pattern: "/api/v1/runs", handler: s.listRuns},
		{method: http.MethodGet, pattern: "/api/v1/keys", handler: s.listKeys},
		{method: http.MethodGet, pattern: "/api/v1/events", handler: s.listEvents},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}", handler: s.getRun},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/result", handler: s.getResult},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/attempts", handler: s.getAttempts},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/signals", handler: s.getSignals},
		{method: http.MethodGet, pattern: "/api/v1/runs/{id}/steps", handler: s.getSteps},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/cancel", handler: s.cancelRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/retry", handler: s.retryRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/{id}/reschedule", handler: s.rescheduleRun},
		{method: http.MethodPost, pattern: "/api/v1/runs/cancel", handler: s.bulkCancel},
		{method: http.MethodPost, pattern: "/api/v1/runs/retry", handler: s.bulkRetry},
		{method: http.MethodPost, pattern: "/api/v1/events/{id}/replay", handler: s.replayEvent},
		{method: http.MethodDelete, pattern: "/api/v1/keys/{key...}", handler: s.releaseKey},
		{method: http.MethodGet, pattern: "/api/v1/keys/{key...}", handler: s.getKey},
		{method: http.MethodPost, pattern: "/api/v1/keys/{key...}/signal", handler: s.signalKey},
		{method: http.MethodGet, pattern: "/api/v1/workers", handler: s.listWorkers},
		{method: http.MethodGet, pattern: "/api/v1/suppressed", handler: s.listSuppressed},
		{method: http.MethodGet, pattern: "/api/v1/stats", handler: s.getStats},
		{method: http.MethodGet, pattern: "/api/v1/queues", handler: s.listQueues},
		{method: http.MethodGet, pattern: "/api/v1/ratelimits", handler: s.listRateLimits},
		{method: http.MethodGet, pattern: "/api/v1/schedules", handler: s.listSchedules},
		{method: http.MethodPost, pattern: "/api/v1/schedules", handler: s.createSchedule},
		{method: http.MethodGet, pattern: "/api/v1/schedules/{name}", handler: s.getSchedule},
		{method: http.MethodPut, pattern: "/api/v1/schedules/{name}", handler: s.putSchedule},
		{method: http.MethodDelete, pattern: "/api/v1/schedules/{name}", handler: s.deleteSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/pause", handler: s.pauseSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/resume", handler: s.resumeSchedule},
		{method: http.MethodPost, pattern: "/api/v1/schedules/{name}/trigger", handler: s.triggerSchedule},
		{method: http.MethodGet, pattern: "/healthz", open: true, handler: s.healthz},
		{method: http.MethodGet, pattern: "/readyz", open: true, handler: s.readyz},
		{method: http.MethodGet, pattern: "/metrics", handler: s.serveMetrics},
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
// (known route or not, so probing reveals nothing) and /metrics.
func needsToken(path string) bool {
	return strings.HasPrefix(path, "/api/") || path == "/api" || path == "/metrics"
}

// authenticate requires "Authorization: Bearer <token>" on protected
// paths. Both tokens are hashed before the constant-time comparison, so
// neither the token's content nor its length leaks through timing.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.opts.Token == "" || !needsToken(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		switch s.bearer(r) {
		case tokenMissing:
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskq"`)
			writeError(w, newError(http.StatusUnauthorized, CodeUnauthorized,
				"missing bearer token: send the header Authorization: Bearer <token>"))
			return
		case tokenWrong:
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskq", error="invalid_token"`)
			writeError(w, newError(http.StatusUnauthorized, CodeUnauthorized, "the bearer token is not valid"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Results of bearer.
const (
	tokenValid = iota
	tokenMissing
	tokenWrong
)

// bearer checks the request's "Authorization: Bearer <token>". Without a
// configured token (insecure mode) every request is valid.
func (s *Server) bearer(r *http.Request) int {
	if s.opts.Token == "" {
		return tokenValid
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return tokenMissing
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(got[:], s.tokenHash[:]) != 1 {
		return tokenWrong
	}
	return tokenValid
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
			"bytes", rec.bytes, "duration_ms", float64(d.Microseconds())/1000, "remote", r.RemoteAddr)
	})
}
