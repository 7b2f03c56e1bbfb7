package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// scheduleRequest is when a trigger's run, or a rescheduled run, is due:
// runAt, an RFC 3339 time, or runIn, a Go duration ("90s", "2h30m") from
// the request; at most one of them.
type scheduleRequest struct {
	RunAt string `json:"runAt"`
	RunIn string `json:"runIn"`
}

// given reports whether the request names a due time.
func (q *scheduleRequest) given() bool { return q.RunAt != "" || q.RunIn != "" }

// parse reads runAt and runIn, naming the field at fault. The limits (how
// far ahead, both given, a negative delay) are the client's, answered as
// a *task.ConfigError naming runAt or runIn when the trigger is made (see
// triggerError).
func (q *scheduleRequest) parse() (at *time.Time, in *time.Duration, e *apiError) {
	bad := func(field, format string, args ...any) *apiError {
		e := newError(http.StatusBadRequest, CodeInvalidField, "field %q "+format, append([]any{field}, args...)...)
		e.Field = field
		return e
	}
	if q.RunAt != "" {
		t, err := time.Parse(time.RFC3339Nano, q.RunAt)
		if err != nil {
			return nil, nil, bad("runAt", "is %s; use an RFC 3339 time such as 2030-01-02T15:04:05Z", quote(q.RunAt))
		}
		at = &t
	}
	if q.RunIn != "" {
		d, err := time.ParseDuration(strings.TrimSpace(q.RunIn))
		if err != nil {
			return nil, nil, bad("runIn", "is %s; use a duration such as 90s or 2h30m", quote(q.RunIn))
		}
		in = &d
	}
	return at, in, nil
}

// options turns the request into trigger options.
func (q *scheduleRequest) options() ([]client.RunOption, *apiError) {
	at, in, e := q.parse()
	if e != nil {
		return nil, e
	}
	var opts []client.RunOption
	if at != nil {
		opts = append(opts, client.RunAt(*at))
	}
	if in != nil {
		opts = append(opts, client.RunIn(*in))
	}
	return opts, nil
}

// runAtError answers a schedule's *task.ConfigError (see
// admission.ScheduleField): 400 naming the field.
func runAtError(se *task.ConfigError) *apiError {
	e := newError(http.StatusBadRequest, CodeInvalidField, "%s", se.Error())
	e.Field = se.Field
	return e
}

// rescheduleRun moves a scheduled run not yet due to a new due time
// (POST /api/v1/runs/{id}/reschedule, body {"runAt": ...} or
// {"runIn": ...}) and answers with the run.
func (s *Server) rescheduleRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req scheduleRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if !req.given() {
		e := newError(http.StatusBadRequest, CodeInvalidField, `send "runAt" (an RFC 3339 time) or "runIn" (a duration such as 90s)`)
		e.Field = "runAt"
		writeError(w, e)
		return
	}
	at, in, e := req.parse()
	if e != nil {
		writeError(w, e)
		return
	}
	var (
		info *client.RunInfo
		err  error
	)
	switch {
	case at != nil && in != nil:
		writeError(w, runAtError(&task.ConfigError{Field: admission.FieldRunAt, Message: "given together with runIn: give one of them"}))
		return
	case at != nil:
		info, err = s.c.Inspector().Reschedule(r.Context(), id, *at)
	default:
		info, err = rescheduleIn(r.Context(), s.c, id, *in)
	}
	var ns *client.StateError
	se, scheduleErr := admission.ScheduleField(err)
	switch {
	case scheduleErr:
		writeError(w, runAtError(se))
	case errors.As(err, &ns) && errors.Is(ns.Kind, client.ErrNotScheduled):
		writeError(w, newError(http.StatusConflict, CodeRunNotScheduled, "%s", ns.Error()))
	case err != nil:
		writeError(w, runError(id, err))
	default:
		writeJSON(w, http.StatusOK, info)
	}
}

// rescheduleIn is Reschedule to d from now on c's clock, a negative d or
// one over the client's MaxScheduleAhead refused as runIn.
func rescheduleIn(ctx context.Context, c *client.Client, runID string, d time.Duration) (*client.RunInfo, error) {
	l := clientlink.Of(c)
	now := l.Clock.Now()
	if _, _, err := l.Admission.ScheduleDelay(&admission.Schedule{In: &d}, now); err != nil {
		return nil, err
	}
	return c.Inspector().Reschedule(ctx, runID, now.Add(d))
}
