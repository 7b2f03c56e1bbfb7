package httpapi

import (
	"errors"
	"github.com/taskq/taskq/internal/fieldfilter"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// query reads a list's query parameters: each known one at most once
// (where may repeat), none unknown.
type query struct {
	v url.Values
}

// readQuery checks that r's query has only the parameters known, each
// once but for those in repeatable.
func readQuery(r *http.Request, known []string, repeatable ...string) (query, *apiError) {
	v := r.URL.Query()
	names := make([]string, 0, len(v))
	for name := range v {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !slices.Contains(known, name) {
			e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter %s is not known here; use %s",
				quote(name), strings.Join(known, ", "))
			e.Field = name
			return query{}, e
		}
		if len(v[name]) > 1 && !slices.Contains(repeatable, name) {
			e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter %s is given %d times; give it once",
				quote(name), len(v[name]))
			e.Field = name
			return query{}, e
		}
	}
	return query{v: v}, nil
}

func badParam(name, format string, args ...any) *apiError {
	e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter %q "+format, append([]any{name}, args...)...)
	e.Field = name
	return e
}

// limit reads ?limit=: 1 to client.ListLimitMax (0 or absent: the
// default).
func (q query) limit() (int, *apiError) {
	s := q.v.Get("limit")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > client.ListLimitMax {
		return 0, badParam("limit", "is %s; give a page size from 1 to %d (default %d)", quote(s), client.ListLimitMax, client.ListLimitDefault)
	}
	return n, nil
}

// time reads an RFC 3339 time.
func (q query) time(name string) (time.Time, *apiError) {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, badParam(name, "is %s; give an RFC 3339 time such as 2026-03-01T12:00:00Z", quote(s))
	}
	return t, nil
}

// status reads ?status=: one of the six statuses.
func (q query) status() (client.Status, *apiError) {
	s := q.v.Get("status")
	switch st := client.Status(s); st {
	case "", client.StatusQueued, client.StatusRunning, client.StatusWaiting, client.StatusSucceeded, client.StatusFailed,
		client.StatusCancelled:
		return st, nil
	}
	return "", badParam("status", "is %s; use queued, running, waiting, succeeded, failed or cancelled", quote(s))
}

// runFilter reads the filters of a runs listing (and of a bulk action's
// filter): task, status, key, since, until, where.
func (q query) runFilter() (client.ListOptions, *apiError) {
	var o client.ListOptions
	var e *apiError
	o.Task, o.Key = q.v.Get("task"), q.v.Get("key")
	if o.Status, e = q.status(); e != nil {
		return o, e
	}
	if o.Since, e = q.time("since"); e != nil {
		return o, e
	}
	if o.Until, e = q.time("until"); e != nil {
		return o, e
	}
	for _, w := range q.v["where"] {
		if _, err := fieldfilter.Parse(w); err != nil {
			return o, listError(&client.ListOptionError{Option: "where", Problem: err.Error()})
		}
		o.Where = append(o.Where, w)
	}
	return o, nil
}

// listError maps what a listing of the Inspector returned to an answer.
func listError(err error) *apiError {
	var oe *client.ListOptionError
	switch {
	case errors.As(err, &oe):
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter %s", oe.Error())
		e.Field = oe.Option
		return e
	case errors.Is(err, client.ErrInvalidCursor):
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter \"cursor\" is not a cursor a listing returned: %v", err)
		e.Field = "cursor"
		return e
	}
	return storeError(err)
}

// runsQuery lists the parameters of GET /api/v1/runs.
var runsQuery = []string{"task", "status", "key", "since", "until", "where", "cursor", "limit", "scheduled"}

// runListItem is a run as a listing shows it: without its input, metadata
// and result (GET /api/v1/runs/{id} has them), as `taskq runs ls -o json`
// prints it.
func runListItem(r *client.RunInfo) *client.RunInfo {
	c := *r
	c.Input, c.Metadata, c.Result = nil, nil, nil
	c.CreatedAt = c.CreatedAt.UTC()
	for _, t := range []**time.Time{&c.StartedAt, &c.FinishedAt, &c.ScheduledAt} {
		if *t != nil {
			u := (*t).UTC()
			*t = &u
		}
	}
	return &c
}

// listRuns answers GET /api/v1/runs: runs newest first, filtered, a page
// at a time.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	q, e := readQuery(r, runsQuery, "where")
	if e != nil {
		writeError(w, e)
		return
	}
	o, e := q.runFilter()
	if e == nil {
		o.Limit, e = q.limit()
	}
	if e != nil {
		writeError(w, e)
		return
	}
	switch v := q.v.Get("scheduled"); v {
	case "", "false":
	case "true":
		o.Scheduled = true
	default:
		writeError(w, badParam("scheduled", "is %s; use true or false", quote(v)))
		return
	}
	o.Cursor = q.v.Get("cursor")
	page, err := s.c.Inspector().ListRuns(r.Context(), o)
	if err != nil {
		writeError(w, listError(err))
		return
	}
	for i, run := range page.Items {
		page.Items[i] = runListItem(run)
	}
	writeJSON(w, http.StatusOK, wire.Page{Name: "runs", Items: page.Items, NextCursor: page.NextCursor})
}

// listKeys answers GET /api/v1/keys: held keys matching a glob, by their
// owner's task and status, a page of SCAN at a time.
func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	q, e := readQuery(r, []string{"match", "task", "status", "cursor", "limit"})
	if e != nil {
		writeError(w, e)
		return
	}
	o := client.ListOptions{Match: q.v.Get("match"), Task: q.v.Get("task"), Cursor: q.v.Get("cursor")}
	if o.Status, e = q.status(); e == nil {
		o.Limit, e = q.limit()
	}
	if e != nil {
		writeError(w, e)
		return
	}
	page, err := s.c.Inspector().ListKeys(r.Context(), o)
	if err != nil {
		writeError(w, listError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.Page{Name: "keys", Items: wire.KeysOf(page.Items), NextCursor: page.NextCursor})
}

// eventPage is one page of GET /api/v1/events.
type eventPage struct {
	Events     []wire.EventResult `json:"events"`
	NextCursor string             `json:"nextCursor,omitempty"`
}

// listEvents answers GET /api/v1/events: events newest first, of one
// event key and a time range, a page at a time.
func (s *Server) listEvents(w http.ResponseWriter, r *http.Request) {
	q, e := readQuery(r, []string{"key", "since", "until", "cursor", "limit"})
	if e != nil {
		writeError(w, e)
		return
	}
	o := client.ListOptions{Key: q.v.Get("key"), Cursor: q.v.Get("cursor")}
	if o.Since, e = q.time("since"); e == nil {
		if o.Until, e = q.time("until"); e == nil {
			o.Limit, e = q.limit()
		}
	}
	if e != nil {
		writeError(w, e)
		return
	}
	page, err := s.c.Inspector().ListEvents(r.Context(), o)
	if err != nil {
		writeError(w, listError(err))
		return
	}
	out := eventPage{Events: make([]wire.EventResult, len(page.Items)), NextCursor: page.NextCursor}
	for i, ev := range page.Items {
		out.Events[i] = wire.EventResultOf(ev)
	}
	writeJSON(w, http.StatusOK, out)
}
