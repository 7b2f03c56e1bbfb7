package httpapi

import (
	"errors"
	"net/http"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

func (s *Server) getKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	if key == "" {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "the key in the path is empty: GET /api/v1/keys/{key}")
		e.Field = "key"
		writeError(w, e)
		return
	}
	info, err := s.c.Inspector().GetKey(r.Context(), key)
	if errors.Is(err, client.ErrKeyNotHeld) {
		writeError(w, newError(http.StatusNotFound, CodeKeyNotFound, "idempotency key %s is not held by any run", quote(key)))
		return
	}
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	// The key's JSON is the command line's too.
	writeJSON(w, http.StatusOK, wire.KeyOf(info))
}

// listTasks answers GET /api/v1/tasks: the registered definitions, the
// counts of the runs by task and status (of a window, with since and
// until; the newest client.CountRunsMax runs at most), each task with
// its paused state.
func (s *Server) listTasks(w http.ResponseWriter, r *http.Request) {
	q, e := readQuery(r, []string{"since", "until"})
	var o client.ListOptions
	if e == nil {
		if o.Since, e = q.time("since"); e == nil {
			o.Until, e = q.time("until")
		}
	}
	if e != nil {
		writeError(w, e)
		return
	}
	regs, err := s.c.Inspector().ListTasks(r.Context())
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	paused, err := s.c.Inspector().PausedTasks(r.Context())
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	tasks := make([]wire.Task, len(regs))
	for i, reg := range regs {
		tasks[i] = wire.TaskOf(reg, paused)
	}
	counts, err := s.c.Inspector().CountRuns(r.Context(), o)
	if err != nil {
		writeError(w, listError(err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": tasks, "runCounts": counts})
}
