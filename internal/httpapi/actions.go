package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/clientlink"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
)

// retryRun answers POST /api/v1/runs/{id}/retry: a failed or cancelled run
// triggered again (Inspector.RetryRun), 201 with the new run.
func (s *Server) retryRun(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	in := s.c.Inspector()
	orig, err := in.GetRun(r.Context(), id)
	if err != nil {
		writeError(w, runError(id, err))
		return
	}
	start := time.Now()
	h, err := in.RetryRun(r.Context(), id)
	s.metrics.observeTrigger(sourceHTTP, start)
	if err != nil {
		writeError(w, s.retryError(r, orig, err))
		return
	}
	res := s.triggered(orig.Task, h)
	status := res.Status
	res.Status = 0
	if status == http.StatusCreated {
		res.RetryOf = id
	}
	writeJSON(w, status, res)
}

// retryError maps what a retry returned to an answer.
func (s *Server) retryError(r *http.Request, orig *client.RunInfo, err error) *apiError {
	var (
		nr   *client.StateError
		coll *client.IdempotencyCollisionError
		nd   *client.DurabilityError
	)
	switch {
	case errors.As(err, &nd) && nd.Collision == nil:
		// The retry was written, short of its durability: 504 naming it,
		// as a trigger's.
		return &apiError{status: http.StatusGatewayTimeout, errorBody: wire.NotDurable(nd)}
	case errors.As(err, &nr) && errors.Is(nr.Kind, client.ErrNotRetryable):
		e := newError(http.StatusConflict, CodeRunNotRetryable, "%s", nr.Error())
		e.ExistingRunID = nr.RetriedBy
		return e
	case errors.As(err, &coll):
		s.metrics.collisions.WithLabelValues(orig.Task, sourceHTTP).Inc()
		return collisionError(coll, s.ownerStatus(r.Context(), coll))
	case errors.Is(err, client.ErrTaskNotFound):
		return newError(http.StatusNotFound, CodeTaskNotFound,
			"task %s of run %s is not registered in namespace %q: start a worker that handles it", quote(orig.Task), orig.ID, clientlink.Of(s.c).Namespace)
	case errors.Is(err, client.ErrRunNotFound):
		return runError(orig.ID, err)
	}
	return triggerError(err)
}

// releaseKey answers DELETE /api/v1/keys/{key}: the key freed, fenced by
// ?owner= when given.
func (s *Server) releaseKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	q, e := readQuery(r, []string{"owner"})
	if e != nil {
		writeError(w, e)
		return
	}
	owner := q.v.Get("owner")
	released, err := s.c.Inspector().ReleaseKey(r.Context(), key, owner)
	var changed *client.StateError
	switch {
	case errors.Is(err, client.ErrKeyNotHeld):
		writeError(w, newError(http.StatusNotFound, CodeKeyNotFound, "idempotency key %s is not held by any run", quote(key)))
		return
	case errors.As(err, &changed) && errors.Is(changed.Kind, client.ErrKeyOwnerChanged):
		e := newError(http.StatusConflict, CodeKeyOwnerChanged, "idempotency key %s is held by run %s, not %s; nothing released",
			quote(key), orDash(changed.Current), quote(owner))
		if changed.Current == "" {
			e = newError(http.StatusConflict, CodeKeyOwnerChanged, "idempotency key %s is no longer held by run %s (it was freed meanwhile); nothing released",
				quote(key), quote(owner))
		}
		e.IdempotencyKey, e.ExistingRunID = key, changed.Current
		writeError(w, e)
		return
	case err != nil:
		writeError(w, storeError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.Release{Key: key, RunID: released, Released: true})
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// replayEvent answers POST /api/v1/events/{id}/replay: the event pushed
// again as a new event (events.Ingester.Replay).
func (s *Server) replayEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	start := time.Now()
	ev, err := s.ing.Replay(r.Context(), id)
	s.metrics.observeTrigger(sourceEvent, start)
	if errors.Is(err, events.ErrEventNotFound) {
		writeError(w, newError(http.StatusNotFound, CodeEventNotFound, "event %s does not exist or has expired", quote(id)))
		return
	}
	if err != nil {
		writeError(w, eventError(err))
		return
	}
	s.metrics.countEvent(ev)
	res := wire.EventResultOf(ev)
	res.ReplayOf = id
	writeJSON(w, http.StatusAccepted, res)
}

// bulkRequest is the body of POST /api/v1/runs/cancel and /runs/retry.
type bulkRequest struct {
	Filter *bulkFilter `json:"filter"`
	DryRun bool        `json:"dryRun"`
	Max    int         `json:"max"`
}

// bulkFilter selects runs as GET /api/v1/runs's query does.
type bulkFilter struct {
	Task   string   `json:"task"`
	Status string   `json:"status"`
	Key    string   `json:"key"`
	Since  string   `json:"since"`
	Until  string   `json:"until"`
	Where  []string `json:"where"`
}

// options reads the filter as the listing's query parameters are read,
// naming the body's fields in errors.
func (f *bulkFilter) options() (client.ListOptions, *apiError) {
	if f == nil {
		return client.ListOptions{}, nil
	}
	v := url.Values{}
	for name, val := range map[string]string{"task": f.Task, "status": f.Status, "key": f.Key, "since": f.Since, "until": f.Until} {
		if val != "" {
			v.Set(name, val)
		}
	}
	v["where"] = f.Where
	o, e := query{v: v}.runFilter()
	if e != nil {
		return o, bodyField(e)
	}
	return o, nil
}

// bodyField turns a query parameter's error into one of the bulk body's
// filter field.
func bodyField(e *apiError) *apiError {
	e.Code = CodeInvalidField
	e.Message = strings.Replace(e.Message, "query parameter \"", "field \"filter.", 1)
	e.Message = strings.Replace(e.Message, "query parameter ", "field filter.", 1)
	e.Field = "filter." + e.Field
	return e
}

func (s *Server) bulkCancel(w http.ResponseWriter, r *http.Request) {
	s.bulk(w, r, s.c.Inspector().CancelRuns)
}

func (s *Server) bulkRetry(w http.ResponseWriter, r *http.Request) {
	s.bulk(w, r, s.c.Inspector().RetryRuns)
}

// bulk runs a bulk action on the runs of the body's filter: 200 with
// what it found and did, 409 too_many_runs when more match than max.
func (s *Server) bulk(w http.ResponseWriter, r *http.Request, action func(ctx context.Context, o client.BulkOptions) (*client.BulkResult, error)) {
	var req bulkRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	o, e := req.Filter.options()
	if e != nil {
		writeError(w, e)
		return
	}
	res, err := action(r.Context(), client.BulkOptions{Filter: o, DryRun: req.DryRun, Max: req.Max})
	var oe *client.ListOptionError
	switch {
	case errors.Is(err, client.ErrTooManyRuns):
		writeError(w, newError(http.StatusConflict, CodeTooManyRuns, "%s; nothing was done", err.Error()))
		return
	case errors.As(err, &oe):
		e := newError(http.StatusBadRequest, CodeInvalidField, "field %s", oe.Error())
		e.Field = oe.Option
		if oe.Option != "max" {
			e.Message, e.Field = "field filter."+oe.Error(), "filter."+oe.Option
		}
		writeError(w, e)
		return
	case err != nil:
		writeError(w, listError(err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
