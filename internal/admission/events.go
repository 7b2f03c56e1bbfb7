package admission

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// What an event records for each subscribed task.
const (
	EventRunCreated      = engine.EventRunCreated
	EventRunDeduplicated = engine.EventRunDeduplicated
	EventRunDebounced    = engine.EventRunDebounced
	EventRunError        = engine.EventRunError
)

// ErrEventNotFound is returned for an event that does not exist (any more).
var ErrEventNotFound = engine.ErrEventNotFound

// The store's event types, named here so that package events needs only
// this package.
type (
	// EventParams are the parameters of the push script.
	EventParams = engine.PushEventParams
	// EventRun is what an event did to one subscribed task.
	EventRun = engine.EventRun
	// EventRecord is a stored event.
	EventRecord = engine.Event
	// FanoutPendingError says an event is stored and its fan-out left for
	// a worker to finish.
	FanoutPendingError = engine.FanoutPendingError
)

// FanoutGrace is how long a fan-out stays pending before a worker finishes
// it.
const FanoutGrace = engine.FanoutGrace

// EventStore is what package events needs of the store (an engine.Engine
// has it).
type EventStore interface {
	PushEvent(ctx context.Context, p *EventParams) ([]EventRun, error)
	PushEvents(ctx context.Context, ps []*EventParams) ([][]EventRun, []error)
	GetEvent(ctx context.Context, id string) (*EventRecord, error)
	GetEvents(ctx context.Context, ids []string) ([]*EventRecord, error)
	ListEventIDs(ctx context.Context, eventKey string, offset, limit int64) ([]string, error)
	PartitionCount(ctx context.Context) (int, error)
	SweepEvents(ctx context.Context, part int, cutoff time.Time, offset, limit int) (removed, looked int, err error)
	EventWaiters(ctx context.Context, eventKeys []string) ([]engine.EventWaiter, error)
	ForgetEventWaiters(ctx context.Context, ws []engine.EventWaiter) error
	WakeRuns(ctx context.Context, runIDs []string) error
}

// Subscriber is a task subscribed to an event's key. Err is set when its
// registered definition cannot be built; the event records it.
type Subscriber struct {
	Name string
	Def  *task.Definition
	Err  error
}

// Event is an event to admit, its payload and metadata already checked by
// CheckEvent.
type Event struct {
	Key       string
	Payload   []byte
	Metadata  []byte
	Now       time.Time
	Retention time.Duration
}

// BuildEvent returns the parameters of the push script: for each
// subscriber the run Build makes of the event, as a direct trigger with
// policy reject would make it, except that a failed expression (or
// definition) is recorded for the task rather than returned.
func (c Config) BuildEvent(ev Event, subs []Subscriber) (*EventParams, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	p := &EventParams{
		ID: id.String(), Key: ev.Key, Payload: ev.Payload, Meta: ev.Metadata,
		Now: ev.Now, Retention: ev.Retention, Tasks: make([]engine.EventTask, 0, len(subs)),
	}
	for _, s := range subs {
		if s.Err != nil {
			p.Tasks = append(p.Tasks, engine.EventTask{Task: s.Name, Error: "task definition: " + s.Err.Error()})
			continue
		}
		run, err := c.Build(Trigger{Def: s.Def, Input: ev.Payload, Metadata: ev.Metadata, Now: ev.Now})
		// A failed expression is the task's error on the event; the
		// idempotency key's is recorded without the wrapper's prefix.
		var ke *task.KeyError
		if errors.As(err, &ke) {
			msg := ke.Error()
			if ke.Kind == task.KeyIdempotency {
				msg = ke.Err.Error()
			}
			p.Tasks = append(p.Tasks, engine.EventTask{Task: s.Name, Error: msg})
			continue
		}
		if err != nil {
			return nil, err
		}
		p.Tasks = append(p.Tasks, engine.EventTask{Run: run})
	}
	return p, nil
}
