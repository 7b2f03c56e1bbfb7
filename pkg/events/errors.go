package events

import (
	"errors"
	"fmt"

	"github.com/taskq/taskq/internal/admission"
)

// ErrEventNotFound is returned by Get for an event that does not exist or
// whose record has expired after its retention.
var ErrEventNotFound = admission.ErrEventNotFound

// ErrInvalidEvent matches every *InvalidEventError.
var ErrInvalidEvent = errors.New("invalid event")

// ErrTooLarge matches every *LimitError.
var ErrTooLarge = errors.New("event over a size limit")

// InvalidEventError says what is wrong with an event; nothing was written.
type InvalidEventError struct {
	// Index is the event's position in a PushMany batch, -1 for Push.
	Index int
	// Field is "key", "payload" or "metadata".
	Field   string
	Message string
}

func (e *InvalidEventError) Error() string {
	return fmt.Sprintf("%s%s %s", eventLabel(e.Index), e.Field, e.Message)
}

// Is makes errors.Is(err, ErrInvalidEvent) hold.
func (e *InvalidEventError) Is(target error) bool { return target == ErrInvalidEvent }

// LimitError says an event's payload or metadata, or a batch, is over its
// limit; nothing was written.
type LimitError struct {
	// Index is the event's position in a batch, -1 for Push or for the
	// batch itself.
	Index int
	// What is "payload", "metadata" or "batch".
	What  string
	Size  int
	Limit int
}

func (e *LimitError) Error() string {
	if e.What == "batch" {
		return fmt.Sprintf("batch has %d events, over the limit of %d", e.Size, e.Limit)
	}
	return fmt.Sprintf("%s%s is %d bytes, over the limit of %d", eventLabel(e.Index), e.What, e.Size, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) hold.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }

// PushError says one event of a PushMany batch could not be stored (Redis
// failed it); the other events of the batch are not affected.
type PushError struct {
	Index int
	Err   error
}

func (e *PushError) Error() string { return fmt.Sprintf("event #%d: %v", e.Index, e.Err) }

// Unwrap returns the event's error.
func (e *PushError) Unwrap() error { return e.Err }

func eventLabel(index int) string {
	if index < 0 {
		return "event: "
	}
	return fmt.Sprintf("event #%d: ", index)
}
