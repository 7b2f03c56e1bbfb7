package httpapi

import (
	"net/http"

	"github.com/taskq/taskq/internal/wire"
)

// listWorkers answers GET /api/v1/workers: live and recently dead workers,
// the runs each holds, and the runs whose lease lapsed.
func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) {
	v, err := s.c.Inspector().ListWorkers(r.Context())
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.WorkersOf(v))
}
