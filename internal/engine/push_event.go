package engine

import "time"

// What push_event.lua records for each subscribed task.
const (
	EventRunCreated      = "created"
	EventRunDeduplicated = "deduplicated"
	EventRunDebounced    = "debounced"
	EventRunError        = "error"
)

// EventTask is one subscribed task's part of an event.
type EventTask struct {
	// Run describes the run to create: its input and metadata are the
	// event's, Now is the event's time. Ignored when Error is set.
	Run *EnqueueParams
	// Task names the task when Run is nil.
	Task string
	// Error says why no run is attempted for the task (its expression
	// failed on this payload). The event records it.
	Error string
}

// PushEventParams describe one event.
type PushEventParams struct {
	ID      string
	Key     string
	Payload []byte // JSON object
	Meta    []byte // JSON object
	Now     time.Time
	// Retention is how long the event record is kept.
	Retention time.Duration
	// Tasks are the subscribed tasks, in the order their keys are claimed.
	Tasks []EventTask
}
