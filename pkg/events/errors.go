package events

import (
	"errors"
	"fmt"

	"github.com/taskq/taskq/internal/admission"
)

// ErrEventNotFound is returned by client.Inspector.GetEvent and Ingester.Replay for an event that does not exist or
// whose record has expired after its retention.
var ErrEventNotFound = admission.ErrEventNotFound

// ErrInvalidEvent matches every *InvalidEventError.
var ErrInvalidEvent = errors.New("invalid event")

// InvalidEventError says what is wrong with an event; nothing was written.
// An event whose payload or metadata is over the client's size limit gets
// one that wraps a *client.LimitError, so errors.Is(err,
// client.ErrInputTooLarge) holds for it too.
type InvalidEventError struct {
	// Index is the event's position in a PushMany batch, -1 for Push.
	Index int
	// Field is "key", "payload" or "metadata".
	Field   string
	Message string
	// Err is the *client.LimitError of a field over its size limit, else
	// nil.
	Err error
}

// Error names the event by its index and the field at fault.
func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("%s%s %s", eventLabel(e.Index), e.Field, e.Message)
}

// Unwrap returns ErrInvalidEvent (so that errors.Is matches it) and, for
// a field over its size limit, the *client.LimitError.
func (e *InvalidEventError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalidEvent}
	}
	return []error{ErrInvalidEvent, e.Err}
}

// FanoutPendingError says an event was stored but what it does to its
// subscribed tasks could not all be written at once: Redis refused or did
// not answer a later step of its fan-out. That happens only when the runs
// of an event live in other partitions than the event itself (a namespace
// with one partition writes an event and its runs in one step, or
// nothing). Nothing is lost: the fan-out stays pending and a worker
// finishes it once it has been pending for FanoutGrace, each subscribed
// task getting exactly one run or one recorded collision, which Get then
// shows. Pushing the event again would store a second event.
type FanoutPendingError = admission.FanoutPendingError

// FanoutGrace is how long a fan-out stays pending before a worker finishes
// it (30s).
const FanoutGrace = admission.FanoutGrace

func eventLabel(index int) string {
	if index < 0 {
		return "event: "
	}
	return fmt.Sprintf("event #%d: ", index)
}
