package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/idempotency"
)

// Machine-readable error codes, the "error" field of every error answer.
// They are stable: clients branch on them, people read "message".
const (
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeEmptyBody            = "empty_body"
	CodeBodyTooLarge         = "body_too_large"
	CodeMalformedJSON        = "malformed_json"
	CodeInvalidField         = "invalid_field"
	CodeInvalidParameter     = "invalid_parameter"
	CodeBatchTooLarge        = "batch_too_large"
	CodePayloadTooLarge      = "payload_too_large"
	CodeTaskNotFound         = "task_not_found"
	CodeRunNotFound          = "run_not_found"
	CodeEventNotFound        = "event_not_found"
	CodeKeyNotFound          = "key_not_found"
	CodeIdempotencyCollision = "idempotency_collision"
	CodeIdempotencyKeyError  = "idempotency_key_error"
	CodeTaskDefinitionError  = "task_definition_error"
	CodeRedisUnavailable     = "redis_unavailable"
	CodeRedisOutOfMemory     = "redis_out_of_memory"
	CodeRedisEvictionPolicy  = "redis_eviction_policy"
	CodeInternal             = "internal"
)

// apiError is the body of every error answer.
type apiError struct {
	status  int
	Code    string `json:"error"`
	Message string `json:"message"`
	// Field names the request field at fault, when one is.
	Field string `json:"field,omitempty"`
	// Index is the item of a batch at fault.
	Index *int `json:"index,omitempty"`
	// Set on idempotency collisions.
	Task          string `json:"task,omitempty"`
	Key           string `json:"key,omitempty"`
	ExistingRunID string `json:"existingRunId,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *apiError) at(index int) *apiError {
	e.Index = &index
	return e
}

// atItem sets the field at fault (see itemField) and, for an item of a
// batch, its index.
func (e *apiError) atItem(list string, index int, field string) *apiError {
	e.Field = itemField(list, index, field)
	if index >= 0 {
		e.at(index)
	}
	return e
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.status, e)
}

// collisionError is the 409 answer of a trigger whose key is held.
func collisionError(c *client.IdempotencyCollisionError) *apiError {
	return &apiError{
		status: http.StatusConflict, Code: CodeIdempotencyCollision,
		Message: fmt.Sprintf("task %q: idempotency key %q is held by run %s; fetch that run's result instead", c.Task, c.Key, c.ExistingRunID),
		Task:    c.Task, Key: c.Key, ExistingRunID: c.ExistingRunID,
	}
}

// triggerError maps what a trigger of the Go client returned to an answer.
func triggerError(err error) *apiError {
	var (
		coll  *client.IdempotencyCollisionError
		limit *client.LimitError
		ae    *apiError
	)
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &coll):
		return collisionError(coll)
	case errors.As(err, &limit):
		e := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s", limit.Error())
		if limit.What == "batch" {
			e = newError(http.StatusBadRequest, CodeBatchTooLarge, "%s", limit.Error())
		}
		e.Field = fieldOfLimit(limit.What)
		return e
	case isKeyError(err):
		return newError(http.StatusUnprocessableEntity, CodeIdempotencyKeyError,
			"the task's idempotency expression cannot be evaluated on this input: %v", err)
	}
	return storeError(err)
}

func fieldOfLimit(what string) string {
	switch what {
	case "input":
		return "input"
	case "additional_metadata":
		return "additionalMetadata"
	}
	return ""
}

func isKeyError(err error) bool {
	for _, target := range []error{idempotency.ErrEval, idempotency.ErrNotString, idempotency.ErrEmptyKey,
		idempotency.ErrKeyTooLong, idempotency.ErrCostLimit, idempotency.ErrInput} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// eventError maps an ingester error to an answer. The ingester validates
// every event (key, payload and metadata, their kinds and sizes); its
// errors name the event's index and field.
func eventError(err error) *apiError {
	var (
		inv   *events.InvalidEventError
		limit *events.LimitError
	)
	switch {
	case errors.As(err, &inv):
		return newError(http.StatusBadRequest, CodeInvalidField, "%s", inv.Error()).atItem("events", inv.Index, inv.Field)
	case errors.As(err, &limit) && limit.What == "batch":
		return newError(http.StatusBadRequest, CodeBatchTooLarge, "%s", limit.Error())
	case errors.As(err, &limit):
		return newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s", limit.Error()).atItem("events", limit.Index, limit.What)
	}
	return storeError(err)
}

// storeError maps a failure to reach or use Redis to an answer.
func storeError(err error) *apiError {
	var (
		ne net.Error
		ue *client.UnavailableError
	)
	if errors.Is(err, client.ErrOutOfMemory) {
		// Nothing was written; a retry once memory is freed succeeds.
		return newError(http.StatusServiceUnavailable, CodeRedisOutOfMemory, "%v", err)
	}
	if errors.As(err, &ue) {
		return newError(http.StatusServiceUnavailable, CodeRedisUnavailable, "%v", ue)
	}
	if errors.Is(err, client.ErrUnavailable) {
		return newError(http.StatusServiceUnavailable, CodeRedisUnavailable, "%v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) {
		return newError(http.StatusServiceUnavailable, CodeRedisUnavailable, "Redis did not answer: %v", err)
	}
	return newError(http.StatusInternalServerError, CodeInternal, "%v", err)
}
