package httpapi

import (
	"errors"
	"github.com/taskq/taskq/internal/wire"
	"net/http"
	"strconv"

	"github.com/taskq/taskq/pkg/client"
)

// listSuppressed answers GET /api/v1/suppressed?key=&owner=&limit=&cursor=:
// the triggers that created no run because another run held their key,
// newest first ("why didn't it run?").
func (s *Server) listSuppressed(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	o := client.ListOptions{Key: q.Get("key"), Owner: q.Get("owner"), Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > client.ListLimitMax {
			e := newError(http.StatusBadRequest, CodeInvalidParameter,
				"query parameter \"limit\" is %s; give a whole number from 1 to %d", quote(v), client.ListLimitMax)
			e.Field = "limit"
			writeError(w, e)
			return
		}
		o.Limit = n
	}
	page, err := s.c.Inspector().ListSuppressed(r.Context(), o)
	if errors.Is(err, client.ErrInvalidCursor) {
		e := newError(http.StatusBadRequest, CodeInvalidParameter, "query parameter \"cursor\" is %s; pass a nextCursor a page returned", quote(o.Cursor))
		e.Field = "cursor"
		writeError(w, e)
		return
	}
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.Page{Name: "triggers", Items: page.Items, NextCursor: page.NextCursor})
}
