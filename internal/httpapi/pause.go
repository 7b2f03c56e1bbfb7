package httpapi

import (
	"errors"
	"github.com/taskq/taskq/internal/clientlink"
	"net/http"

	"github.com/taskq/taskq/pkg/client"
)

// pauseTask answers POST /api/v1/tasks/{task}/pause: workers start none
// of the task's runs until it is resumed; triggers are still accepted.
func (s *Server) pauseTask(w http.ResponseWriter, r *http.Request) { s.setTaskPaused(w, r, true) }

// resumeTask answers POST /api/v1/tasks/{task}/resume.
func (s *Server) resumeTask(w http.ResponseWriter, r *http.Request) { s.setTaskPaused(w, r, false) }

func (s *Server) setTaskPaused(w http.ResponseWriter, r *http.Request, pause bool) {
	name := r.PathValue("task")
	verb := "resumed"
	if pause {
		verb = "paused"
	}
	p, err := s.c.Inspector().SetTaskPaused(r.Context(), name, pause)
	switch {
	case errors.Is(err, client.ErrTaskNotFound):
		writeError(w, newError(http.StatusNotFound, CodeTaskNotFound,
			"task %s is not registered in namespace %q", quote(name), clientlink.Of(s.c).Namespace))
		return
	case err != nil:
		writeError(w, storeError(err))
		return
	}
	if p.Changed {
		s.log.Info("taskq: task "+verb+" over the HTTP API", "task", name, "remote", r.RemoteAddr)
	}
	writeJSON(w, http.StatusOK, p)
}
