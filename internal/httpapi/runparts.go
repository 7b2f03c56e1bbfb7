package httpapi

import (
	"errors"
	"github.com/taskq/taskq/internal/wire"
	"net/http"

	"github.com/taskq/taskq/pkg/client"
)

// attemptList is the body of GET /api/v1/runs/{id}/attempts.
type attemptList struct {
	RunID    string               `json:"runId"`
	Attempts []client.AttemptInfo `json:"attempts"`
}

// getAttempts answers GET /api/v1/runs/{id}/attempts: the run's attempts,
// oldest first (at most client.MaxAttemptHistory+1, so one page).
func (s *Server) getAttempts(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	run, err := s.c.Inspector().GetRun(r.Context(), id)
	if err != nil {
		writeError(w, runError(id, err))
		return
	}
	as := run.Attempts
	if as == nil {
		as = []client.AttemptInfo{}
	}
	writeJSON(w, http.StatusOK, attemptList{RunID: id, Attempts: as})
}

// pageQuery reads ?cursor= and ?limit=, the only parameters of a run's
// signals and steps.
func pageQuery(r *http.Request) (client.ListOptions, *apiError) {
	q, e := readQuery(r, []string{"cursor", "limit"})
	if e != nil {
		return client.ListOptions{}, e
	}
	o := client.ListOptions{Cursor: q.v.Get("cursor")}
	o.Limit, e = q.limit()
	return o, e
}

// runPartError maps what reading a run's signals or steps returned.
func runPartError(id string, err error) *apiError {
	if errors.Is(err, client.ErrRunNotFound) {
		return runError(id, err)
	}
	return listError(err)
}

// getSignals answers GET /api/v1/runs/{id}/signals: the signals sent to
// the run, in order, a page at a time.
func (s *Server) getSignals(w http.ResponseWriter, r *http.Request) {
	o, e := pageQuery(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	page, err := s.c.Inspector().RunSignals(r.Context(), id, o)
	if err != nil {
		writeError(w, runPartError(id, err))
		return
	}
	writeJSON(w, http.StatusOK, wire.Page{RunID: id, Name: "signals", Items: page.Items, NextCursor: page.NextCursor})
}

// getSteps answers GET /api/v1/runs/{id}/steps: the durable steps the run
// completed, with their results, a page at a time.
func (s *Server) getSteps(w http.ResponseWriter, r *http.Request) {
	o, e := pageQuery(r)
	if e != nil {
		writeError(w, e)
		return
	}
	id := r.PathValue("id")
	page, err := s.c.Inspector().RunSteps(r.Context(), id, o)
	if err != nil {
		writeError(w, runPartError(id, err))
		return
	}
	writeJSON(w, http.StatusOK, wire.Page{RunID: id, Name: "steps", Items: page.Items, NextCursor: page.NextCursor})
}
