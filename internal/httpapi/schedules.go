package httpapi

import (
	"errors"
	"net/http"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Error codes of the schedules' routes.
const (
	CodeScheduleNotFound = "schedule_not_found"
	CodeScheduleExists   = "schedule_exists"
)

// listSchedules answers GET /api/v1/schedules: every cron schedule of the
// namespace, by name.
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	infos, err := s.c.Schedules().List(r.Context())
	if err != nil {
		writeError(w, scheduleError("", err))
		return
	}
	out := wire.ScheduleList{Schedules: make([]wire.Schedule, len(infos))}
	for i, info := range infos {
		out.Schedules[i] = wire.ScheduleOf(info)
	}
	writeJSON(w, http.StatusOK, out)
}

// getSchedule answers GET /api/v1/schedules/{name}.
func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	info, err := s.c.Schedules().Get(r.Context(), name)
	if err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, wire.ScheduleOf(info))
}

// createSchedule answers POST /api/v1/schedules: a new schedule, 409
// schedule_exists when the name is taken.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var body wire.Schedule
	if e := s.decodeBody(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	info, err := s.c.Schedules().Create(r.Context(), body.Definition())
	if err != nil {
		writeError(w, scheduleError(body.Name, err))
		return
	}
	writeJSON(w, http.StatusCreated, wire.ScheduleOf(info))
}

// putSchedule answers PUT /api/v1/schedules/{name}: the schedule
// registered, or its new definition written over the one of that name
// (which keeps its cursor and paused state). The body's name, when set,
// must be the path's.
func (s *Server) putSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	var body wire.Schedule
	if e := s.decodeBody(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	if body.Name != "" && body.Name != name {
		e := newError(http.StatusBadRequest, CodeInvalidField, "field \"name\" is %s but the path names %s", quote(body.Name), quote(name))
		e.Field = "name"
		writeError(w, e)
		return
	}
	body.Name = name
	info, err := s.c.Schedules().Put(r.Context(), body.Definition())
	if err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, wire.ScheduleOf(info))
}

// deleteSchedule answers DELETE /api/v1/schedules/{name}.
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := s.c.Schedules().Delete(r.Context(), name); err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": name, "deleted": true})
}

// pauseSchedule answers POST /api/v1/schedules/{name}/pause.
func (s *Server) pauseSchedule(w http.ResponseWriter, r *http.Request) { s.setPaused(w, r, true) }

// resumeSchedule answers POST /api/v1/schedules/{name}/resume.
func (s *Server) resumeSchedule(w http.ResponseWriter, r *http.Request) { s.setPaused(w, r, false) }

func (s *Server) setPaused(w http.ResponseWriter, r *http.Request, paused bool) {
	name := r.PathValue("name")
	sc := s.c.Schedules()
	if err := sc.SetPaused(r.Context(), name, paused); err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	info, err := sc.Get(r.Context(), name)
	if err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	writeJSON(w, http.StatusOK, wire.ScheduleOf(info))
}

// triggerSchedule answers POST /api/v1/schedules/{name}/trigger: one run
// now, with the key the schedule's expression gives for the time now.
func (s *Server) triggerSchedule(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	sc := s.c.Schedules()
	info, err := sc.Get(r.Context(), name)
	if err != nil {
		writeError(w, scheduleError(name, err))
		return
	}
	h, err := sc.TriggerNow(r.Context(), name)
	var (
		nd   *client.DurabilityError
		coll *client.IdempotencyCollisionError
	)
	switch {
	case errors.As(err, &nd):
		writeError(w, &apiError{status: http.StatusAccepted, errorBody: wire.NotDurable(nd)})
	case errors.As(err, &coll):
		writeError(w, &apiError{status: http.StatusConflict, errorBody: wire.Collision(coll, "")})
	case err != nil:
		writeError(w, scheduleError(name, err))
	default:
		writeJSON(w, http.StatusCreated, wire.Triggered(info.Schedule.Task, h))
	}
}

// scheduleError maps the errors of client.Schedules to answers.
func scheduleError(name string, err error) *apiError {
	var se *task.ConfigError
	switch {
	case errors.Is(err, task.ErrInvalidSchedule) && errors.As(err, &se):
		e := newError(http.StatusBadRequest, CodeInvalidField, "%v", err)
		e.Field = se.Field
		return e
	case errors.Is(err, client.ErrScheduleNotFound):
		return newError(http.StatusNotFound, CodeScheduleNotFound, "schedule %s does not exist", quote(name))
	case errors.Is(err, client.ErrScheduleExists):
		return newError(http.StatusConflict, CodeScheduleExists, "schedule %s already exists; PUT /api/v1/schedules/%s replaces it", quote(name), name)
	case errors.Is(err, client.ErrTaskNotFound):
		return newError(http.StatusNotFound, CodeTaskNotFound, "%v", err)
	}
	return storeError(err)
}
