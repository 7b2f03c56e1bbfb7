package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Causes a handler's context is cancelled with; read them with
// context.Cause(ctx). A run cancelled by a client or operator ends its
// handler's context with task.ErrRunCancelled; one whose place another
// run took (superseded by a newer trigger of its key, or cancelled by its
// concurrency group) with a *client.RunError naming that run (By) and the
// group (Group), which matches task.ErrRunCancelled too.
var (
	// ErrLeaseLost: this worker could not renew its lease in time and the
	// run may be redelivered to another worker; anything the handler
	// writes to taskq from now on is refused.
	ErrLeaseLost = errors.New("lease lost")
	// ErrShutdown: the worker is shutting down and gives the run back.
	ErrShutdown = errors.New("worker shutting down")
	// ErrTimeout: the attempt ran past the task's timeout.
	ErrTimeout = errors.New("attempt timed out")
)

// endedCause is the cause a handler's context is cancelled with when its
// run turned out to have been cancelled, given the run's error: the same
// the cancel notice gives (see canceller). A run another run took the
// place of gets the *client.RunError a waiter would; any other cancel is
// task.ErrRunCancelled.
func endedCause(runID, runError string) error {
	if by, ok := cancelreason.SupersededBy(runError); ok {
		return &client.RunError{RunID: runID, Status: client.StatusCancelled, Message: runError, By: by}
	}
	if cause, ok := concurrencyCause(runID, runError); ok {
		return cause
	}
	return task.ErrRunCancelled
}

// Context is what a handler receives: a context.Context that ends when the
// run is cancelled, times out or the worker loses its lease, plus what the
// handler needs to know about its run.
type Context interface {
	context.Context
	// RunID is the run's ID.
	RunID() string
	// TaskName is the name of the run's task.
	TaskName() string
	// Attempt counts deliveries of the run, from 1.
	Attempt() int
	// StepID is the same on every attempt and redelivery of this run:
	// use it as the idempotency key of calls to external APIs.
	StepID() string
	// IdempotencyKey is the key the run holds ("" for tasks without one).
	IdempotencyKey() string
	// Metadata is the run's additional metadata (JSON).
	Metadata() json.RawMessage
	// Logger logs with the run's attributes.
	Logger() *slog.Logger
	// NextSignal blocks for the run's next signal.
	NextSignal() (client.SignalInfo, error)
	// Signals iterates the run's signals until the context ends.
	Signals() iter.Seq[client.SignalInfo]
	// Step runs fn once per run and returns its stored JSON result on
	// later attempts; see the typed Step function.
	Step(name string, fn func(ctx context.Context, stepID string) (any, error)) (json.RawMessage, error)
}

// runStore is what a handler's Context reads and writes in Redis: the
// run's signals, the results of its steps, and the events its durable
// waits look for.
type runStore interface {
	ReadSignals(ctx context.Context, runID, cursor string, count int, block time.Duration) ([]engine.Signal, error)
	StepResult(ctx context.Context, runID, name string) ([]byte, bool, error)
	SaveStepResult(ctx context.Context, runID, name string, result []byte) ([]byte, error)
	AddEventWaiter(ctx context.Context, eventKey, runID string, now time.Time) error
	PageEvents(ctx context.Context, eventKey string, after *engine.IndexEntry, limit int) ([]engine.IndexEntry, error)
	GetEvents(ctx context.Context, ids []string) ([]*engine.Event, error)
}

// runContext is the Context of one attempt (see processor.process).
type runContext struct {
	context.Context
	store runStore
	// base is the worker's logger, which the run's adds its attributes to.
	base                 *slog.Logger
	runID, task, key, ns string
	attempt              int
	meta                 json.RawMessage

	// The logger is made when first asked for: most runs log nothing.
	logOnce sync.Once
	log     *slog.Logger

	sigMu     sync.Mutex
	sigCursor string

	// spawner spawns the run's children (Spawn); positions counts the
	// positions its unnamed spawns took.
	spawner   *spawner
	positions atomic.Int64
	// waits counts the durable waits the handler made (see durable.go).
	waits int
	// workerClock is the worker's clock (nil: the system's).
	workerClock task.Clock
}

func (c *runContext) RunID() string             { return c.runID }
func (c *runContext) TaskName() string          { return c.task }
func (c *runContext) Attempt() int              { return c.attempt }
func (c *runContext) StepID() string            { return fmt.Sprintf("taskq:%s:%s", c.ns, c.runID) }
func (c *runContext) IdempotencyKey() string    { return c.key }
func (c *runContext) Metadata() json.RawMessage { return c.meta }

// Logger returns the run's logger: the worker's, with the run's attributes.
func (c *runContext) Logger() *slog.Logger {
	c.logOnce.Do(func() {
		c.log = lazyWith(c.base, slog.String("run", c.runID), slog.String("task", c.task), slog.Int("attempt", c.attempt))
	})
	return c.log
}

// nonRetryableError marks a handler error that must not be retried.
type nonRetryableError struct{ Err error }

func (e *nonRetryableError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *nonRetryableError) Unwrap() error { return e.Err }

// NonRetryable wraps err so the run fails at once, whatever retries remain.
func NonRetryable(err error) error {
	if err == nil {
		return nil
	}
	return &nonRetryableError{Err: err}
}
