// Package admission is the one step every trigger passes before it is
// written: the limits on its input and metadata, the derivation of its
// idempotency key, and the parameters of the enqueue script. The client's
// triggers (and so the HTTP API's and the command line's) and the runs of
// events (package events) all come through here, so a limit or a run field
// added here applies to each of them.
//
// The path of one trigger: client.TriggerJSON (or events.Ingester.Push) →
// admission.Admit (or CheckEvent and Build) → engine.Triggers.EnqueueBatch
// (or PushEvent) → lua/enqueue.lua (or lua/push_event.lua, or the steps of
// a fan-out, see internal/redisstore/fanout.go).
package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/jsondepth"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// The parts of a trigger an error can name.
const (
	FieldInput    = "input"
	FieldMetadata = "additional_metadata"
)

// Limits bound a trigger's input and metadata. Zero means no limit on
// size, and idempotency.MaxInputDepthDefault levels of nesting.
type Limits struct {
	MaxInputBytes    int
	MaxMetadataBytes int
	MaxInputDepth    int
}

// Config is what admission needs of a client's options.
type Config struct {
	Limits
	// Retention is how long a run record is kept after the run ends.
	Retention time.Duration
	// MaxSignals bounds the signals the owner of a key may hold when a
	// trigger signals it.
	MaxSignals int
	// MaxScheduleAhead bounds how far ahead a trigger may schedule its
	// run (0: MaxScheduleAheadDefault).
	MaxScheduleAhead time.Duration
}

// LimitError says an input or its metadata is over its size limit.
type LimitError struct {
	Field string // FieldInput or FieldMetadata
	Size  int
	Limit int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the limit of %d", e.Field, e.Size, e.Limit)
}

// InvalidError says an input or its metadata is not JSON of the kind
// wanted, or nests too deep.
type InvalidError struct {
	Field   string // FieldInput or FieldMetadata
	Problem string // "is not valid JSON", "must be a JSON object, got an array", ...
}

func (e *InvalidError) Error() string { return e.Field + " " + e.Problem }

// Trigger is one trigger to admit.
type Trigger struct {
	Def      *task.Definition
	Input    []byte // JSON; empty means {}
	Metadata []byte // JSON object; empty means {}
	// Policy applies when another run holds the key ("" rejects).
	Policy engine.Policy
	Now    time.Time
	// Source says where the trigger came from ("" is a client's), recorded
	// when it creates no run because its key is held.
	Source string
	// Schedule, when set, queues the run later (see Schedule).
	Schedule *Schedule
	// Priority is the run's priority, 1 to engine.PriorityMax; 0 takes the
	// task's (task.Options.Priority), and that 0 the default.
	Priority int
	// Parent, when set, makes the run the child named ChildName of the
	// run Parent (worker.Spawn): its key is engine.ChildKey of the two and
	// the key the task derives, if any; a task without an expression holds
	// it with the status strategy (for at most ChildHold).
	Parent, ChildName string
}

// ChildHold is how long the child of a task without an expression holds
// its key at most (the status strategy's fallback ttl), a scheduled child
// that much after its due time.
const ChildHold = task.DurationMax

// Admit checks a trigger against every limit, derives its key and returns
// the parameters of the enqueue script, or a *LimitError, *InvalidError,
// *task.KeyError or a *task.ConfigError (a priority out of range, a
// schedule that cannot be accepted).
// It writes nothing.
func (c Config) Admit(tr Trigger) (*engine.EnqueueParams, error) {
	tr.Input, tr.Metadata = orEmpty(tr.Input), orEmpty(tr.Metadata)
	if err := c.checkLimits(tr.Input, tr.Metadata); err != nil {
		return nil, err
	}
	// Deriving a key checks that input and metadata are JSON objects, so
	// only a task without a key needs the check on its own.
	if tr.Def.Idempotency == nil {
		if err := checkJSON(tr.Input, tr.Metadata, false); err != nil {
			return nil, err
		}
	}
	return c.Build(tr)
}

// CheckEvent checks an event's payload and metadata once for all the tasks
// subscribed to it: the limits every trigger has (as Admit), and that both
// are JSON objects. Build then makes each task's run.
func (c Config) CheckEvent(payload, metadata []byte) error {
	payload, metadata = orEmpty(payload), orEmpty(metadata)
	if err := c.checkLimits(payload, metadata); err != nil {
		return err
	}
	return checkJSON(payload, metadata, true)
}

// Build derives the trigger's key and returns the parameters of the
// enqueue script, for input and metadata already checked (Admit,
// CheckEvent). A failed expression (the idempotency key, a rate limit key,
// the concurrency group) is a *task.KeyError, a schedule that cannot be
// accepted a *task.ConfigError (see ScheduleField).
func (c Config) Build(tr Trigger) (*engine.EnqueueParams, error) {
	tr.Input, tr.Metadata = orEmpty(tr.Input), orEmpty(tr.Metadata)
	def := tr.Def
	delay, err := c.delay(def, tr.Schedule, tr.Now)
	if err != nil {
		return nil, err
	}
	prio := tr.Priority
	if prio == 0 {
		prio = def.Priority
	}
	if prio < 0 || prio > engine.PriorityMax {
		return nil, &task.ConfigError{Task: def.Name, Field: "priority",
			Message: fmt.Sprintf("%d is not 1, 2 or %d", prio, engine.PriorityMax)}
	}
	key, err := def.Key(tr.Input, tr.Metadata)
	if err != nil {
		return nil, err
	}
	// Rate limit keys: evaluated here only to refuse an input they fail
	// on (a *task.KeyError) before anything is written; the
	// worker evaluates them again when the run starts.
	if _, err := taskdef.RateLimitKeys(def, tr.Input, tr.Metadata); err != nil {
		return nil, err
	}
	// Dynamic units and limits likewise: a failure or a value out of range
	// refuses the trigger.
	if _, _, err := taskdef.RateLimitUnits(def, tr.Input, tr.Metadata); err != nil {
		return nil, err
	}
	// The worker derives the groups again when the run starts; nothing of
	// them is stored with the run.
	if _, err := taskdef.ConcurrencyGroups(def, tr.Input, tr.Metadata); err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	p := &engine.EnqueueParams{
		RunID: id.String(), Task: def.Name, Input: tr.Input, Meta: tr.Metadata,
		Strategy: engine.StrategyNone, Retries: def.Retries, MaxDeliveries: def.MaxDeliveries,
		Timeout: def.Timeout, Retention: c.Retention, Now: tr.Now,
		Policy: tr.Policy, MaxSignals: c.MaxSignals, Source: tr.Source, Priority: max(prio, engine.PriorityDefault),
	}
	if tr.Policy == engine.PolicySignal {
		sid, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		p.SignalID = sid.String()
	}
	if idem := def.Idempotency; idem != nil {
		p.Key = key
		p.Strategy = idem.Strategy
		p.Hold = taskdef.Hold(idem)
		p.Retain = idem.Retain
	}
	if tr.Parent != "" {
		p.Key = engine.ChildKey(tr.Parent, tr.ChildName, p.Key)
		if p.Strategy == engine.StrategyNone {
			p.Strategy, p.Hold = engine.StrategyStatus, ChildHold
		}
	}
	schedule(p, delay)
	return p, nil
}

// checkLimits holds every limit on a trigger's input and metadata: each
// path calls it, so a limit added here applies to all of them.
func (c Config) checkLimits(input, meta []byte) error {
	if c.MaxInputBytes > 0 && len(input) > c.MaxInputBytes {
		return &LimitError{Field: FieldInput, Size: len(input), Limit: c.MaxInputBytes}
	}
	if c.MaxMetadataBytes > 0 && len(meta) > c.MaxMetadataBytes {
		return &LimitError{Field: FieldMetadata, Size: len(meta), Limit: c.MaxMetadataBytes}
	}
	// Before any JSON parsing, which recurses once per level.
	for _, f := range []struct {
		name string
		data []byte
	}{{FieldInput, input}, {FieldMetadata, meta}} {
		limit := c.MaxInputDepth
		if limit <= 0 {
			limit = idempotency.MaxInputDepthDefault
		}
		if jsondepth.Exceeds(f.data, limit) {
			return &InvalidError{Field: f.name, Problem: fmt.Sprintf("nests deeper than the limit of %d levels", limit)}
		}
	}
	return nil
}

// checkJSON checks that input and metadata are JSON, metadata an object,
// and input too when inputObject.
func checkJSON(input, meta []byte, inputObject bool) error {
	if err := jsonKind(FieldInput, input, inputObject); err != nil {
		return err
	}
	return jsonKind(FieldMetadata, meta, true)
}

func jsonKind(field string, data []byte, object bool) error {
	if !json.Valid(data) {
		return &InvalidError{Field: field, Problem: "is not valid JSON"}
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); object && t[0] != '{' {
		return &InvalidError{Field: field, Problem: "must be a JSON object, got " + JSONKind(t[0])}
	}
	return nil
}

// JSONKind names the kind of JSON value whose first byte is first, for
// messages such as "must be a JSON object, got an array".
func JSONKind(first byte) string {
	switch first {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func orEmpty(b []byte) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}")
	}
	return b
}
