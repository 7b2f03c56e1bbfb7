package httpapi

import (
	"net/http"

	"github.com/taskq/taskq/pkg/client"
)

// rateLimitList is the body of GET /api/v1/ratelimits.
type rateLimitList struct {
	RateLimits []client.RateLimitInfo `json:"rateLimits"`
}

// listRateLimits answers GET /api/v1/ratelimits: the rate limits the
// registered tasks declare, and their use now (of the key `key` for a
// keyed limit).
func (s *Server) listRateLimits(w http.ResponseWriter, r *http.Request) {
	q, e := readQuery(r, []string{"key"})
	if e != nil {
		writeError(w, e)
		return
	}
	ls, err := s.c.Inspector().ListRateLimits(r.Context(), q.v.Get("key"))
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	if ls == nil {
		ls = []client.RateLimitInfo{}
	}
	writeJSON(w, http.StatusOK, rateLimitList{RateLimits: ls})
}
