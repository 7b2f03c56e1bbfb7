package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/taskq/taskq/pkg/client"
	"net/http"
	"time"

	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/events"
)

// eventRequest is one event: its key, and payload and metadata as JSON
// objects (absent means {}).
type eventRequest struct {
	Key      *string         `json:"key"`
	Payload  json.RawMessage `json:"payload"`
	Metadata json.RawMessage `json:"metadata"`
}

// pushRequest is the body of POST /api/v1/events: one event, or a batch
// under "events" (decoded item by item, see decodeBatch).
type pushRequest struct {
	Key      *string           `json:"key"`
	Payload  json.RawMessage   `json:"payload"`
	Metadata json.RawMessage   `json:"metadata"`
	Events   []json.RawMessage `json:"events"`
}

func (s *Server) pushEvents(w http.ResponseWriter, r *http.Request) {
	var req pushRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Events != nil {
		if req.Key != nil || len(req.Payload) > 0 || len(req.Metadata) > 0 {
			writeError(w, newError(http.StatusBadRequest, CodeInvalidField,
				`send either "key", "payload" and "metadata" (one event) or "events" (a batch), not both`))
			return
		}
		s.pushBatch(w, r, req.Events)
		return
	}
	in, e := eventInput(eventRequest{Key: req.Key, Payload: req.Payload, Metadata: req.Metadata}, -1)
	if e != nil {
		writeError(w, e)
		return
	}
	start := time.Now()
	ev, err := s.ing.Push(r.Context(), in.Key, in.Payload, in.Metadata)
	s.metrics.observeTrigger(sourceEvent, start)
	if err != nil {
		writeError(w, eventError(err))
		return
	}
	s.metrics.countEvent(ev)
	writeJSON(w, http.StatusAccepted, wire.EventResultOf(ev))
}

func (s *Server) pushBatch(w http.ResponseWriter, r *http.Request, items []json.RawMessage) {
	reqs, e := decodeBatch[eventRequest]("events", "event", items, s.opts.MaxBatch)
	if e != nil {
		writeError(w, e)
		return
	}
	in := make([]events.Input, len(reqs))
	for i, req := range reqs {
		var e *apiError
		if in[i], e = eventInput(req, i); e != nil {
			writeError(w, e)
			return
		}
	}
	start := time.Now()
	evs, err := s.ing.PushMany(r.Context(), in)
	s.metrics.observeTrigger(sourceEvent, start)
	if evs == nil && err != nil {
		writeError(w, eventError(err))
		return
	}
	out := make([]wire.EventResult, len(evs))
	stored := 0
	for i, ev := range evs {
		if ev != nil {
			s.metrics.countEvent(ev)
			out[i] = wire.EventResultOf(ev)
			stored++
		}
	}
	var first *client.BatchItemError
	if stored == 0 && errors.As(err, &first) {
		// Nothing was stored (Redis is down): say so as a whole, not with
		// a 202 that lists only failures.
		writeError(w, eventError(first.Err))
		return
	}
	for _, e := range unwrapJoined(err) {
		var pe *client.BatchItemError
		if errors.As(e, &pe) && pe.Index < len(out) {
			ae := eventError(pe.Err)
			out[pe.Index] = wire.EventResult{Key: in[pe.Index].Key, Runs: []client.EventTaskRun{}, Error: ae.Code, Message: ae.Message}
		}
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"events": out})
}

// eventInput takes one event of the request to the ingester, which
// validates it. Only what the ingester cannot see is checked here: a key
// that is absent rather than empty, and null for an absent payload or
// metadata.
func eventInput(req eventRequest, index int) (events.Input, *apiError) {
	if req.Key == nil {
		e := newError(http.StatusBadRequest, CodeInvalidField, "field %q is required", itemField("events", index, "key")).atItem("events", index, "key")
		if index < 0 {
			e.Message += ` (or "events" for a batch)`
		}
		return events.Input{}, e
	}
	if reservedWebhookMetadata(req.Metadata) {
		return events.Input{}, newError(http.StatusBadRequest, CodeInvalidField,
			"field %q is reserved: only a signed webhook (POST /api/v1/webhooks/{source}) sets it", itemField("events", index, "metadata."+WebhookMetadata)).
			atItem("events", index, "metadata."+WebhookMetadata)
	}
	return events.Input{Key: *req.Key, Payload: absentIfNull(req.Payload), Metadata: absentIfNull(req.Metadata)}, nil
}

// reservedWebhookMetadata reports whether an event's metadata (a JSON
// object, or anything the ingester will refuse) has the field a signed
// webhook writes, which names its source and delivery: an event pushed
// with a token may not pass for one.
func reservedWebhookMetadata(raw json.RawMessage) bool {
	if !bytes.Contains(raw, []byte(`"`+WebhookMetadata+`"`)) {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return false
	}
	_, ok := m[WebhookMetadata]
	return ok
}

func absentIfNull(raw json.RawMessage) json.RawMessage {
	if string(bytes.TrimSpace(raw)) == "null" {
		return nil
	}
	return raw
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	ev, err := s.c.Inspector().GetEvent(r.Context(), id)
	if errors.Is(err, events.ErrEventNotFound) {
		writeError(w, newError(http.StatusNotFound, CodeEventNotFound, "event %s does not exist or has expired", quote(id)))
		return
	}
	if err != nil {
		writeError(w, storeError(err))
		return
	}
	writeJSON(w, http.StatusOK, ev)
}
