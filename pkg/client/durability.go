package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/taskq/taskq/internal/durability"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// Durable acknowledgement: a trigger that asks for it (Options.Durability,
// task.Options.Durability, WithDurability) returns only once WAIT (or
// WAITAOF) confirms that enough replicas hold its write. What that
// promises, and what it does not, is in docs/guarantees.md.

// WithDurability makes this trigger (or every trigger of this batch) wait
// until d is reached, in place of the task's and the client's levels;
// WithDurability(task.Durability{}) turns them off for it.
func WithDurability(d task.Durability) RunOption {
	return func(o *runOptions) { o.durability = &d }
}

// resolveDurability is the level a trigger of def waits for: its own, else
// the task's, else the client's. It is checked against the client's
// OperationTimeout, which bounds the write and the wait together.
func (c *Client) resolveDurability(def *task.Definition, own *task.Durability) (task.Durability, error) {
	d := c.opts.Durability
	switch {
	case own != nil:
		d = *own
	case def.Durability != nil:
		d = *def.Durability
	}
	if err := checkDurability(d, c.opts.OperationTimeout); err != nil {
		return task.Durability{}, fmt.Errorf("task %q: %w", def.Name, err)
	}
	if !engine.Durable(d) || c.opts.SkipDurability {
		return task.Durability{}, nil
	}
	return engine.WithDefaults(d), nil
}

// checkDurability says, as a *task.ConfigError, what is wrong with d for
// a client whose calls are bounded by opTimeout.
func checkDurability(d task.Durability, opTimeout time.Duration) error {
	if p := durability.Problem(d.Replicas, d.Timeout); p != "" {
		return &task.ConfigError{Field: "durability", Message: p}
	}
	if t := engine.WithDefaults(d).Timeout; engine.Durable(d) && t >= opTimeout {
		return &task.ConfigError{Field: "durability", Message: fmt.Sprintf(
			"timeout %s is not below the operation timeout %s, which bounds the write and the wait together", t, opTimeout)}
	}
	return nil
}

// Acknowledgement is how far a durable trigger's write reached.
type Acknowledgement struct {
	// Wanted is the level the trigger asked for, defaults filled in.
	Wanted task.Durability
	// Replicas is how many replicas acknowledged the write within
	// Wanted.Timeout.
	Replicas int
	// LocalFsynced says the master's append-only file holds the write on
	// disk (asked for with Wanted.LocalFsync).
	LocalFsynced bool
	// Reached says the write reached the level asked for: Wanted.Replicas
	// replicas, and the local fsync when it was asked for (false when
	// waiting for them failed).
	Reached bool
}

// describe says how far a reached, as a person would.
func (a Acknowledgement) describe() string {
	s := fmt.Sprintf("%d of %d replica(s)", a.Replicas, a.Wanted.Replicas)
	if a.Wanted.LocalFsync {
		if a.LocalFsynced {
			s += " and the local fsync"
		} else {
			s += " and no local fsync"
		}
	}
	return s
}

// ErrNotDurable matches every *DurabilityError.
var ErrNotDurable = errors.New("durable acknowledgement not reached")

// ErrFsyncUnsupported matches the error of a trigger (or of New, for
// Options.Durability) that asked for a local fsync of a Redis older than
// 7.2 (WAITAOF needs 7.2 or later); the error names the Redis and its
// version. Nothing was written.
var ErrFsyncUnsupported = engine.ErrFsyncUnsupported

// DurabilityError says a durable trigger's write did not reach the level
// it asked for in time, or that waiting for it failed. The trigger DID
// take effect on the master: the run WAS written there (or, for a
// duplicate, the key's owner was found, attached or signalled), and it
// will run unless a failover loses it, promoting a replica that does not
// hold the write.
//
// A single trigger (RunNoWait, Run, TriggerJSON, Schedules.TriggerNow,
// Inspector.RetryRun) that falls short returns no handle, only this
// error, whose Run is the run it wrote. Retrying it with the same
// idempotency key is safe: the retry finds that same run (a collision
// naming it, or the run itself under attach) and creates no other. A task
// without an idempotency key has no such protection: a retry creates
// another run.
//
// A batch (RunMany, TriggerManyJSON) keeps its partial result: it returns
// every ref as usual, those that fell short included, and one
// DurabilityError listing them (Runs, Indexes).
type DurabilityError struct {
	Task string
	// Run is the run a single trigger wrote: the handle the trigger would
	// have returned, its TriggerInfo included. For a rejected duplicate
	// (Collision) it is the key's owner, whose write fell short. Nil for a
	// batch.
	Run *RunHandle
	// Runs are, for a batch, the runs of each trigger that fell short (the
	// owner, for one that collided), and Indexes their positions in the
	// batch, ascending. Nil for a single trigger.
	Runs    []*RunHandle
	Indexes []int
	// Acknowledgement is the level reached: for a batch, the lowest of the
	// triggers that fell short.
	Acknowledgement
	// Collision is set when the single trigger was a rejected duplicate:
	// Run is then the key's owner, whose write fell short.
	Collision *IdempotencyCollisionError
	// Err is why waiting failed, when it failed rather than timed out (the
	// connection broke after the write, the server refused WAITAOF).
	Err error
}

// Error says which run was written on the master, how far its write reached,
// and whether retrying is safe.
func (e *DurabilityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "durable acknowledgement not reached: task %q ", e.Task)
	switch {
	case e.Run == nil:
		fmt.Fprintf(&b, "%d run(s) of the batch were written on the master", len(e.Runs))
	case e.Collision != nil:
		fmt.Fprintf(&b, "run %s (the owner of key %q) exists on the master", e.Run.ID(), e.Collision.Key)
	default:
		fmt.Fprintf(&b, "run %s was written on the master", e.Run.ID())
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ", but waiting for %d replica(s) failed: %v", e.Wanted.Replicas, e.Err)
	} else {
		fmt.Fprintf(&b, ", but only %s acknowledged within %s", e.describe(), e.Wanted.Timeout)
	}
	b.WriteString("; it will run unless a failover loses it, ")
	if e.Run != nil && e.Run.trigger.IdempotencyKey == "" && e.Collision == nil {
		b.WriteString("and the task has no idempotency key: a retry creates another run")
	} else {
		b.WriteString("and retrying with the same idempotency key is safe (it returns the same run)")
	}
	return b.String()
}

// Unwrap returns ErrNotDurable (so that errors.Is matches it), why
// waiting failed and, for a rejected duplicate, the collision, so that
// errors.As finds an *IdempotencyCollisionError too.
func (e *DurabilityError) Unwrap() []error {
	out := []error{ErrNotDurable}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	if e.Collision != nil {
		out = append(out, e.Collision)
	}
	return out
}

// acknowledged records on h how far its trigger's write reached (nothing
// when it asked for no durability) and counts it; it returns false when
// the level was not reached.
func (c *Client) acknowledged(task string, h *RunHandle, ack *engine.Ack) bool {
	if ack == nil {
		return true
	}
	h.trigger.Durability = &Acknowledgement{Wanted: ack.Wanted, Replicas: ack.Replicas, LocalFsynced: ack.LocalFsynced, Reached: ack.Reached()}
	h.ackErr = ack.Err
	c.metrics.durable(task, ack)
	return ack.Reached()
}

// notDurable is the error of a single trigger whose write, that of run h,
// fell short.
func notDurable(task string, h *RunHandle) *DurabilityError {
	return &DurabilityError{Task: task, Run: h, Acknowledgement: *h.trigger.Durability, Err: h.ackErr}
}

// notDurableBatch is the error of the triggers of a batch whose handles hs,
// at indexes, fell short.
func notDurableBatch(task string, hs []*RunHandle, indexes []int) *DurabilityError {
	e := &DurabilityError{Task: task, Runs: hs, Indexes: indexes}
	for i, h := range hs {
		if i == 0 || h.trigger.Durability.Replicas < e.Replicas {
			e.Acknowledgement = *h.trigger.Durability
		}
		if e.Err == nil {
			e.Err = h.ackErr
		}
	}
	return e
}

// clientMetrics are the client's Prometheus metrics: of durable triggers.
type clientMetrics struct {
	durableTriggers *prometheus.CounterVec
	shortfalls      *prometheus.CounterVec
}

func newClientMetrics() *clientMetrics {
	return &clientMetrics{
		durableTriggers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_durable_triggers_total",
			Help: "Triggers that waited for durable acknowledgement (WAIT or WAITAOF), by task."}, []string{"task"}),
		shortfalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "taskq_durability_shortfalls_total",
			Help: "Durable triggers whose write took effect but did not reach the level asked for, by task and reason " +
				"(timeout: fewer replicas acknowledged in time; error: the wait itself failed)."}, []string{"task", "reason"}),
	}
}

// durable counts one durable trigger and, when it fell short, why.
func (m *clientMetrics) durable(task string, ack *engine.Ack) {
	m.durableTriggers.WithLabelValues(task).Inc()
	switch {
	case ack.Err != nil:
		m.shortfalls.WithLabelValues(task, "error").Inc()
	case !ack.Reached():
		m.shortfalls.WithLabelValues(task, "timeout").Inc()
	}
}

// Describe and Collect make clientMetrics one prometheus.Collector.
func (m *clientMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.durableTriggers.Describe(ch)
	m.shortfalls.Describe(ch)
}

// Collect sends the metrics' values.
func (m *clientMetrics) Collect(ch chan<- prometheus.Metric) {
	m.durableTriggers.Collect(ch)
	m.shortfalls.Collect(ch)
}
