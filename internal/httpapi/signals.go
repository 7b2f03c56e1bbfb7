package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
)

// Error codes of the signal endpoint.
const (
	CodeKeyNotHeld    = "key_not_held"
	CodeOwnerFinished = "owner_finished"
	CodeSignalLimit   = "signal_limit"
)

// signalPayloadLimit is the What of the client's *LimitError for a signal
// payload over its size limit (the other signal limit is the run's count).
const signalPayloadLimit = "signal payload"

type signalRequest struct {
	// Payload is any JSON value; the owner's handler receives it as is.
	Payload json.RawMessage `json:"payload"`
}

// signalKey delivers a payload to the run that owns a key now.
func (s *Server) signalKey(w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	var req signalRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if len(req.Payload) == 0 {
		e := newError(http.StatusBadRequest, CodeInvalidField, `field "payload" is missing; send {"payload": <any JSON>}`)
		e.Field = "payload"
		writeError(w, e)
		return
	}
	rec, err := s.c.Signal(r.Context(), key, req.Payload)
	var (
		notHeld  *client.StateError
		finished *client.StateError
		limit    *client.LimitError
	)
	switch {
	case err == nil:
		writeJSON(w, http.StatusAccepted, wire.SignalledBy(rec))
	case errors.As(err, &notHeld) && errors.Is(notHeld.Kind, client.ErrKeyNotHeld):
		writeError(w, newError(http.StatusNotFound, CodeKeyNotHeld, "no active run holds idempotency key %s", quote(key)))
	case errors.As(err, &finished) && errors.Is(finished.Kind, client.ErrOwnerFinished):
		e := newError(http.StatusConflict, CodeOwnerFinished,
			"idempotency key %s is held by run %s, which has %s: a finished run cannot be signalled", quote(key), finished.RunID, finished.Status)
		e.IdempotencyKey, e.ExistingRunID, e.ExistingStatus = key, finished.RunID, finished.Status
		writeError(w, e)
	case errors.As(err, &limit) && limit.What != signalPayloadLimit:
		// The run already holds the most signals allowed.
		e := newError(http.StatusConflict, CodeSignalLimit, "%s", limit.Error())
		e.IdempotencyKey = key
		writeError(w, e)
	case errors.As(err, &limit):
		e := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s", limit.Error())
		e.Field = "payload"
		writeError(w, e)
	default:
		writeError(w, triggerError(err))
	}
}
