package client

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	if !d.Enabled() || c.opts.SkipDurability {
		return task.Durability{}, nil
	}
	return d.WithDefaults(), nil
}

// checkDurability says, as a *task.ConfigError, what is wrong with d for
// a client whose calls are bounded by opTimeout.
func checkDurability(d task.Durability, opTimeout time.Duration) error {
	if err := d.Validate(); err != nil {
		return err
	}
	if t := d.WithDefaults().Timeout; d.Enabled() && t >= opTimeout {
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
}

// Reached reports whether the write reached the level asked for.
func (a Acknowledgement) Reached() bool {
	return a.Replicas >= a.Wanted.Replicas && (!a.Wanted.LocalFsync || a.LocalFsynced)
}

func (a Acknowledgement) String() string {
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
// take effect on the master: the run was created (or, for a duplicate,
// the owner was found, attached or signalled), as Runs says; but it may
// not survive a failover, which may promote a replica that does not hold
// it. Retrying with the same idempotency key is safe: the retry finds the
// run (a collision, or the owner under attach) and waits again. A task
// without an idempotency key has no such protection: a retry creates
// another run.
//
// A single trigger that fails so also returns its handle with the error;
// a batch returns every handle as usual, and one DurabilityError listing
// the triggers that fell short.
type DurabilityError struct {
	Task string
	// Runs are the runs the trigger created or was deduplicated to: one for
	// a single trigger, each trigger that fell short for a batch.
	Runs []*RunHandle
	// Indexes line up with Runs: the position of each trigger in its batch
	// (nil for a single trigger).
	Indexes []int
	// Acknowledgement is the level reached: for a batch, the lowest of the
	// triggers that fell short.
	Acknowledgement
	// Collision is set when the single trigger was a rejected duplicate:
	// Runs[0] is then the key's owner, whose write fell short.
	Collision *IdempotencyCollisionError
	// Err is why waiting failed, when it failed rather than timed out (the
	// connection broke after the write, the server refused WAITAOF).
	Err error
}

// handle is the first run the error names: for a single trigger, its run.
func (e *DurabilityError) handle() *RunHandle {
	if len(e.Runs) == 0 {
		return nil
	}
	return e.Runs[0]
}

// RunID is the ID of Handle's run.
func (e *DurabilityError) runID() string {
	if h := e.handle(); h != nil {
		return h.ID()
	}
	return ""
}

func (e *DurabilityError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "durable acknowledgement not reached: task %q ", e.Task)
	switch {
	case e.Collision != nil:
		fmt.Fprintf(&b, "run %s (the owner of key %q) exists", e.runID(), e.Collision.Key)
	case e.Indexes != nil:
		fmt.Fprintf(&b, "%d run(s) of the batch were written", len(e.Runs))
	default:
		fmt.Fprintf(&b, "run %s was written", e.runID())
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ", but waiting for %d replica(s) failed: %v", e.Wanted.Replicas, e.Err)
	} else {
		fmt.Fprintf(&b, ", but only %s acknowledged within %s", e.Acknowledgement, e.Wanted.Timeout)
	}
	b.WriteString("; it may not survive a failover, ")
	if h := e.handle(); h != nil && h.key == "" && e.Collision == nil {
		b.WriteString("and the task has no idempotency key: a retry creates another run")
	} else {
		b.WriteString("and retrying with the same idempotency key is safe")
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNotDurable) hold.
func (e *DurabilityError) Is(target error) bool { return target == ErrNotDurable }

// Unwrap returns why waiting failed and, for a rejected duplicate, the
// collision, so that errors.As finds an *IdempotencyCollisionError too.
func (e *DurabilityError) Unwrap() []error {
	var out []error
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
	h.ack = &Acknowledgement{Wanted: ack.Wanted, Replicas: ack.Replicas, LocalFsynced: ack.LocalFsynced}
	h.ackErr = ack.Err
	ok := ack.Reached()
	c.metrics.durable(task, ack)
	return ok
}

// notDurable is the error of the triggers whose handles hs (at indexes,
// nil for a single trigger) fell short.
func notDurable(task string, hs []*RunHandle, indexes []int) *DurabilityError {
	e := &DurabilityError{Task: task, Runs: hs, Indexes: indexes}
	for i, h := range hs {
		if i == 0 || h.ack.Replicas < e.Replicas {
			e.Acknowledgement = *h.ack
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
