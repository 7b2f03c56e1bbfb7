package httpapi

import (
	"context"
	"github.com/taskq/taskq/internal/clientlink"
	"net/http"
	"time"
)

// readyTimeout bounds the Redis ping of /readyz, so a probe gets an answer
// before its own timeout.
const readyTimeout = 2 * time.Second

// healthz says the process is up; it does not touch Redis.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz says whether the server can work: Redis answers, and the last
// check of its maxmemory-policy found it will not evict keys (or the risk
// was accepted). It is open to probes, so an anonymous caller learns only
// ready or not ready; a caller with a token of read scope also learns why not.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.c.Ping(ctx); err != nil {
		e := storeError(err)
		e.status = http.StatusServiceUnavailable // whatever failed, not ready
		if s.knownCaller(r) {
			e.Message = "not ready: Redis is not reachable: " + e.Message
		} else {
			e.Message = "not ready"
		}
		writeError(w, e)
		return
	}
	if err := clientlink.Of(s.c).Guard.Err(); err != nil {
		e := newError(http.StatusServiceUnavailable, CodeRedisEvictionPolicy, "%v", err)
		if !s.knownCaller(r) {
			e.Message = "not ready"
		}
		writeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
