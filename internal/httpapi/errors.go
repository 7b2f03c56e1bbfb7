package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/wire"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// Machine-readable error codes, the "error" field of every error answer.
// They are stable: clients branch on them, people read "message".
const (
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not_found"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeRequestTimeout       = "request_timeout"
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
	CodeIdempotencyCollision = wire.CodeIdempotencyCollision
	CodeIdempotencyKeyError  = wire.CodeIdempotencyKeyError
	CodeDurabilityNotReached = wire.CodeDurabilityNotReached
	CodeTaskDefinitionError  = "task_definition_error"
	CodeRunNotRetryable      = "run_not_retryable"
	CodeKeyOwnerChanged      = "key_owner_changed"
	CodeTooManyRuns          = "too_many_runs"
	CodeRunNotScheduled      = "run_not_scheduled"
	CodeRedisUnavailable     = "redis_unavailable"
	CodeRedisOutOfMemory     = "redis_out_of_memory"
	CodeRedisEvictionPolicy  = "redis_eviction_policy"
	CodeInternal             = "internal"
)

// Error codes of scopes and signed webhooks.
const (
	// CodeForbidden: the token is valid but lacks the route's scope.
	CodeForbidden = "forbidden"
	// Webhooks (POST /api/v1/webhooks/{source}).
	CodeWebhookSourceNotFound = "webhook_source_not_found"
	CodeSignatureMissing      = "signature_missing"
	CodeSignatureInvalid      = "signature_invalid"
	CodeSignatureStale        = "signature_stale"
	CodeWebhookMapping        = "webhook_mapping_failed"
)

// apiError is an error answer: its status, and the body every error
// shares with the command line's JSON errors (wire.Error).
type apiError struct {
	status int
	errorBody
}

// errorBody is embedded under its own name: apiError's Error method is
// the error interface's.
type errorBody = wire.Error

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// maxQuoted bounds the bytes of a request's value an error message quotes:
// a value is quoted by its prefix and its size, never in full, so that an
// error is never larger than a few hundred bytes whatever was sent.
const maxQuoted = 64

// clip returns s, or its first maxQuoted bytes (cut at a character
// boundary) and "…" when it is longer.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	cut := maxQuoted
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// quote quotes a value of the request for an error message: in full when
// short, else its first maxQuoted bytes and its size.
func quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return fmt.Sprintf("%s (%d bytes)", strconv.Quote(clip(s)), len(s))
}

// maxMessage bounds an error message in bytes, whatever it quotes.
const maxMessage = 1024

// boundMessage keeps a message short whatever it quotes, such as another
// package's error that repeats a value of the request: every run of
// non-space bytes longer than maxQuoted is cut to its prefix and its size,
// and the whole to maxMessage bytes.
func boundMessage(msg string) string {
	if len(msg) <= maxQuoted {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		j := i
		for j < len(msg) && msg[j] != ' ' {
			j++
		}
		if word := msg[i:j]; len(word) > maxQuoted {
			fmt.Fprintf(&b, "%s(%d bytes)", clip(word), len(word))
		} else {
			b.WriteString(word)
		}
		if j < len(msg) {
			b.WriteByte(' ')
		}
		i = j + 1
		if b.Len() > maxMessage {
			break
		}
	}
	out := b.String()
	if len(out) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(out[cut]) {
			cut--
		}
		out = out[:cut] + "… (message cut)"
	}
	return out
}

func newError(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, errorBody: wire.Error{Code: code, Message: boundMessage(fmt.Sprintf(format, args...))}}
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
		e.Index = &index
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

// writeError writes e, its message and field bounded (see boundMessage)
// however it was built.
func writeError(w http.ResponseWriter, e *apiError) {
	e.Message, e.Field = boundMessage(e.Message), clip(e.Field)
	writeJSON(w, e.status, e.errorBody)
}

// collisionError is the 409 answer of a trigger whose key is held;
// status is the owner's status ("" when unknown). The message quotes the
// task and key by their prefix when they are long.
func collisionError(c *client.IdempotencyCollisionError, status client.Status) *apiError {
	e := &apiError{status: http.StatusConflict, errorBody: wire.Collision(c, status)}
	e.Message = fmt.Sprintf("task %s: idempotency key %s is held by run %s; fetch that run's result instead", quote(c.Task), quote(c.Key), c.ExistingRunID)
	return e
}

// triggerError maps what a trigger of the Go client returned to an answer.
func triggerError(err error) *apiError {
	var (
		coll  *client.IdempotencyCollisionError
		limit *client.LimitError
		ae    *apiError
	)
	se, scheduleErr := admission.ScheduleField(err)
	switch {
	case errors.As(err, &ae):
		return ae
	case scheduleErr:
		return runAtError(se)
	case errors.As(err, &coll):
		return collisionError(coll, "")
	case errors.Is(err, client.ErrFsyncUnsupported):
		// Nothing was written: this Redis cannot give the level asked for.
		e := newError(http.StatusBadRequest, CodeInvalidField, "%v", err)
		e.Field = "durability.localFsync"
		return e
	case errors.As(err, &limit):
		e := newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s", limit.Error())
		if limit.What == "batch" {
			e = newError(http.StatusBadRequest, CodeBatchTooLarge, "%s", limit.Error())
		}
		e.Field = fieldOfLimit(limit.What)
		return e
	case isKeyError(err):
		what := "the task's idempotency expression"
		var ke *task.KeyError
		if errors.As(err, &ke) {
			switch ke.Kind {
			case task.KeyRateLimit:
				what = "a rate limit's key expression"
			case task.KeyRateLimitUnits:
				what = "a rate limit's units expression"
			case task.KeyRateLimitLimit:
				what = "a rate limit's limit expression"
			case task.KeyConcurrency:
				what = "a concurrency expression of the task"
			}
		}
		e := newError(http.StatusUnprocessableEntity, CodeIdempotencyKeyError,
			"%s cannot be evaluated on this input: %v", what, err)
		// What failed and where, as the command line's JSON says it.
		if k, ok := wire.KeyErrorKind(err); ok {
			e.Kind, e.Line, e.Column, e.Field = k.Kind, k.Line, k.Column, k.Field
		}
		return e
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
		idempotency.ErrKeyTooLong, idempotency.ErrCostLimit, idempotency.ErrInput, task.ErrRateLimitValue} {
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
		limit *client.LimitError
	)
	switch {
	case errors.As(err, &inv) && errors.As(err, &limit):
		return newError(http.StatusRequestEntityTooLarge, CodePayloadTooLarge, "%s", inv.Error()).atItem("events", inv.Index, inv.Field)
	case errors.As(err, &inv):
		return newError(http.StatusBadRequest, CodeInvalidField, "%s", inv.Error()).atItem("events", inv.Index, inv.Field)
	case errors.As(err, &limit):
		return newError(http.StatusBadRequest, CodeBatchTooLarge, "%s", limit.Error())
	}
	return storeError(err)
}

// storeError maps a failure to reach or use Redis to an answer. It is the
// one place where an error of Redis becomes a status and a code: every
// handler's mapping (triggerError, eventError, runError, the signal's and
// the definition's) ends here for what it does not know, and /readyz
// answers with it too. A new kind of Redis failure is mapped here, before
// the catch-all.
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
