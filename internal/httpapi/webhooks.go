package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/taskq/taskq/internal/clientlink"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/jsondepth"
	"github.com/taskq/taskq/internal/webhook"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/idempotency"
)

// WebhookMetadata is the field of an event's metadata that says which
// webhook source it came from and the sender's delivery ID:
// {"webhook": {"source": "github", "deliveryId": "..."}}. A task
// subscribed to a webhook's events deduplicates the sender's retries with
// an expression such as additional_metadata.webhook.deliveryId.
const WebhookMetadata = "webhook"

// receiveWebhook is POST /api/v1/webhooks/{source}: a sender's own
// request, with no bearer token. The source must be configured, the body
// JSON within the usual limits, and its signature good under one of the
// source's secrets; then the source's expressions map it to an event,
// pushed as any other. Nothing is written before all of that holds.
func (s *Server) receiveWebhook(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("source")
	src := s.opts.Webhooks.Get(name)
	if src == nil {
		e := newError(http.StatusNotFound, CodeWebhookSourceNotFound, "no webhook source %s is configured", quote(name))
		e.Field = "source"
		writeError(w, e)
		return
	}
	infoOf(r).who = "webhook:" + src.Name
	data, e := s.readBody(w, r)
	if e != nil {
		writeError(w, e)
		return
	}
	if err := src.Verify(r.Header.Get, data, clientlink.Of(s.c).Clock.Now()); err != nil {
		writeError(w, webhookError(err))
		return
	}
	if e := checkBodyText(data); e != nil {
		writeError(w, e)
		return
	}
	limit := clientlink.Of(s.c).Admission.MaxInputDepth
	if limit <= 0 {
		limit = idempotency.MaxInputDepthDefault
	}
	if jsondepth.Exceeds(data, limit) {
		writeError(w, newError(http.StatusBadRequest, CodeInvalidField, "the body nests deeper than the limit of %d levels", limit))
		return
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var body any
	if err := dec.Decode(&body); err != nil {
		writeError(w, decodeError(err, ""))
		return
	}
	if _, err := dec.Token(); err != io.EOF {
		writeError(w, newError(http.StatusBadRequest, CodeMalformedJSON, "request body has data after its JSON value"))
		return
	}
	ev, err := src.Map(celNumbers(body), lowerHeaders(r.Header))
	if err != nil {
		writeError(w, webhookError(err))
		return
	}
	payload := json.RawMessage(data)
	if ev.Payload != nil {
		if payload, err = json.Marshal(ev.Payload); err != nil {
			writeError(w, newError(http.StatusUnprocessableEntity, CodeWebhookMapping, "the payload does not encode as JSON: %v", err))
			return
		}
	}
	hook := map[string]string{"source": src.Name}
	if ev.DeliveryID != "" {
		hook["deliveryId"] = ev.DeliveryID
	}
	meta, _ := json.Marshal(map[string]any{WebhookMetadata: hook})
	start := time.Now()
	stored, err := s.ing.Push(r.Context(), ev.Key, payload, meta)
	s.metrics.observeTrigger(sourceEvent, start)
	if err != nil {
		writeError(w, eventError(err))
		return
	}
	s.metrics.countEvent(stored)
	writeJSON(w, http.StatusAccepted, wire.EventResultOf(stored))
}

// celNumbers turns the json.Numbers of a decoded body into what the
// expressions expect: an int64 for a whole number that fits (so that
// string(body.id) is "123456789", not "1.23456789e+08"), a float64 for
// any other.
func celNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = celNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = celNumbers(e)
		}
	}
	return v
}

// lowerHeaders gives the expressions the request's headers by lower-case
// name, several values of one name joined with ", ".
func lowerHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, vs := range h {
		out[strings.ToLower(k)] = strings.Join(vs, ", ")
	}
	return out
}

// webhookError maps a refusal of package webhook to an answer.
func webhookError(err error) *apiError {
	switch {
	case errors.Is(err, webhook.ErrSignatureMissing):
		return newError(http.StatusUnauthorized, CodeSignatureMissing, "%v", err)
	case errors.Is(err, webhook.ErrSignatureStale):
		return newError(http.StatusUnauthorized, CodeSignatureStale, "%v", err)
	case errors.Is(err, webhook.ErrSignatureInvalid):
		return newError(http.StatusUnauthorized, CodeSignatureInvalid, "%v", err)
	case errors.Is(err, webhook.ErrMapping):
		return newError(http.StatusUnprocessableEntity, CodeWebhookMapping, "%v", err)
	}
	return newError(http.StatusInternalServerError, CodeInternal, "%v", err)
}
