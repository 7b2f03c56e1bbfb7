package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Durable waits. A handler that sleeps or waits for a signal with the
// functions below gives its slot and lease back while it waits: its
// attempt ends with the run waiting, and when the wait is over the run is
// queued again and its handler runs again from the top, on any worker.
// Everything durable it did before the wait returns its stored result
// instead of running again: Step by its name, and each wait by its place
// among the handler's waits (the first SleepFor or WaitForSignal it makes
// is wait 1, the next wait 2, and so on).
//
// So the code before a wait must be deterministic in the waits it makes:
// on every run of the handler, the same waits in the same order. A
// handler whose code changed between attempts so that its n-th wait is of
// another kind than the one recorded is refused: the wait returns a
// *NondeterminismError and the run fails without a retry.

// ErrWaitTimeout matches the error of a durable wait that ended at its
// timeout without what it waited for.
var ErrWaitTimeout = errors.New("durable wait timed out")

// ErrNondeterministic matches every *NondeterminismError.
var ErrNondeterministic = errors.New("handler is not deterministic")

// NondeterminismError says a handler made another durable wait at the
// same place than an earlier run of the same attempt history recorded:
// its code changed between attempts, or it chose its waits from something
// that changes (the time, a random number, a map's order). The run fails
// without a retry, with this error.
type NondeterminismError struct {
	RunID string
	// Wait is the wait's place among the handler's waits, from 1.
	Wait int
	// Recorded is the kind of wait recorded there (sleep, signal), Made the
	// kind the handler made this time.
	Recorded, Made string
}

func (e *NondeterminismError) Error() string {
	return fmt.Sprintf("run %s: durable wait %d was a %s wait on an earlier attempt and is a %s wait now: "+
		"the handler must make the same waits in the same order on every attempt", e.RunID, e.Wait, e.Recorded, e.Made)
}

// Is makes errors.Is(err, ErrNondeterministic) hold.
func (e *NondeterminismError) Is(target error) bool { return target == ErrNondeterministic }

// suspension ends a handler that waits durably: the value its wait panics
// with, recovered where the handler is called (see call), so that no code
// of the handler runs after it.
type suspension struct {
	until  time.Time // zero: no timeout, only a signal wakes the run
	reason string    // what the run waits for, its Waiting
}

func (s *suspension) Error() string { return "worker: run suspended: " + s.reason }

// waitRecord is what a durable wait stores at its place, once: its kind
// and when it ends (unix ms, 0 for none).
type waitRecord struct {
	Kind  string `json:"kind"`
	Until int64  `json:"until,omitempty"`
}

// waitDone is how a signal wait ended, stored once so that every later
// run of the handler gets the same answer.
type waitDone struct {
	Signal   *Signal `json:"signal,omitempty"`
	Cursor   string  `json:"cursor,omitempty"`
	TimedOut bool    `json:"timedOut,omitempty"`
}

// Wait kinds, as recorded.
const (
	waitSleep  = "sleep"
	waitSignal = engine.WaitSignalPrefix
)

// SleepFor sleeps durably for d: see SleepUntil.
func SleepFor(ctx Context, d time.Duration) error {
	c, err := durableOf(ctx)
	if err != nil {
		return err
	}
	return c.sleep(c.clock().Add(d))
}

// SleepUntil sleeps durably until t. The run gives its slot back and
// waits, with status waiting; at t it is queued again and its handler runs
// again, and this call returns nil once t has passed. The time is fixed
// by the first run of the handler that reaches this wait: a later run
// does not sleep again. It returns an error only when the sleep could not
// be recorded, or a *NondeterminismError.
func SleepUntil(ctx Context, t time.Time) error {
	c, err := durableOf(ctx)
	if err != nil {
		return err
	}
	return c.sleep(t)
}

// WaitForSignal waits durably for the run's next signal (client
// RunHandle.Signal, or a trigger under the signal conflict policy) and
// returns it. While it waits the run gives its slot back, with status
// waiting; a signal queues it again at once, and its handler's run again
// gets the signal here. With timeout > 0 the wait ends after timeout with
// an error matching ErrWaitTimeout; 0 waits without a limit. Each wait
// returns the signal after the one the previous wait returned, the same
// on every later run of the handler. Do not mix it with NextSignal and
// Signals, which read the same signals without storing where they are.
func WaitForSignal(ctx Context, timeout time.Duration) (Signal, error) {
	c, err := durableOf(ctx)
	if err != nil {
		return Signal{}, err
	}
	return c.waitSignal(timeout)
}

// durableOf finds the run's own context under the wrappers middleware
// may have put around it.
func durableOf(ctx Context) (*runContext, error) {
	for {
		switch c := ctx.(type) {
		case *runContext:
			return c, nil
		case derivedContext:
			ctx = c.Context
		default:
			return nil, fmt.Errorf("worker: durable waits need the Context taskq gave the handler, not a %T", ctx)
		}
	}
}

func (c *runContext) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// nextWait claims the handler's next wait place and returns its record,
// stored now if this is the first run of the handler to reach it.
func (c *runContext) nextWait(kind string, until time.Time) (int, waitRecord, error) {
	c.sigMu.Lock()
	c.waits++
	n := c.waits
	c.sigMu.Unlock()
	rec := waitRecord{Kind: kind}
	if !until.IsZero() {
		rec.Until = until.UnixMilli()
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return n, rec, err
	}
	name := waitStepName(n)
	stored, ok, err := c.store.StepResult(c, c.runID, name)
	if err == nil && !ok {
		stored, err = c.store.SaveStepResult(c, c.runID, name, raw)
	}
	if err != nil {
		return n, rec, fmt.Errorf("worker: durable wait %d: %w", n, err)
	}
	var got waitRecord
	if err := json.Unmarshal(stored, &got); err != nil {
		return n, rec, fmt.Errorf("worker: durable wait %d: decode its record: %w", n, err)
	}
	if got.Kind != kind {
		return n, got, &NondeterminismError{RunID: c.runID, Wait: n, Recorded: got.Kind, Made: kind}
	}
	return n, got, nil
}

// waitStepName is where wait n's record is stored among the run's steps;
// "#" keeps it apart from the names steps are given.
func waitStepName(n int) string { return "#wait" + strconv.Itoa(n) }

func (c *runContext) sleep(until time.Time) error {
	_, rec, err := c.nextWait(waitSleep, until)
	if err != nil {
		return err
	}
	due := time.UnixMilli(rec.Until)
	if !c.clock().Before(due) {
		return nil
	}
	panic(&suspension{until: due, reason: waitSleep + " until " + due.UTC().Format("2006-01-02T15:04:05.000Z07:00")})
}

func (c *runContext) waitSignal(timeout time.Duration) (Signal, error) {
	var until time.Time
	if timeout > 0 {
		until = c.clock().Add(timeout)
	}
	n, rec, err := c.nextWait(waitSignal, until)
	if err != nil {
		return Signal{}, err
	}
	doneName := waitStepName(n) + "/done"
	finish := func(d waitDone) (Signal, error) {
		if d.Cursor != "" {
			c.sigMu.Lock()
			c.sigCursor = d.Cursor
			c.sigMu.Unlock()
		}
		if d.TimedOut || d.Signal == nil {
			return Signal{}, fmt.Errorf("worker: durable wait %d for a signal: %w", n, ErrWaitTimeout)
		}
		return *d.Signal, nil
	}
	// An earlier run of the handler may have ended this wait already.
	if stored, ok, err := c.store.StepResult(c, c.runID, doneName); err != nil {
		return Signal{}, fmt.Errorf("worker: durable wait %d: %w", n, err)
	} else if ok {
		var d waitDone
		if err := json.Unmarshal(stored, &d); err != nil {
			return Signal{}, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
		}
		return finish(d)
	}
	c.sigMu.Lock()
	cursor := c.sigCursor
	c.sigMu.Unlock()
	sigs, err := c.store.ReadSignals(c, c.runID, cursor, 1, -1)
	if err != nil {
		return Signal{}, fmt.Errorf("worker: durable wait %d: read signals: %w", n, err)
	}
	var d waitDone
	switch {
	case len(sigs) > 0:
		d = waitDone{Signal: &Signal{ID: sigs[0].ID, Payload: sigs[0].Payload}, Cursor: sigs[0].Cursor}
	case rec.Until > 0 && !c.clock().Before(time.UnixMilli(rec.Until)):
		d = waitDone{TimedOut: true}
	default:
		var due time.Time
		if rec.Until > 0 {
			due = time.UnixMilli(rec.Until)
		}
		panic(&suspension{until: due, reason: waitSignal})
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return Signal{}, err
	}
	stored, err := c.store.SaveStepResult(c, c.runID, doneName, raw)
	if err != nil {
		return Signal{}, fmt.Errorf("worker: durable wait %d: %w", n, err)
	}
	if err := json.Unmarshal(stored, &d); err != nil {
		return Signal{}, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
	}
	return finish(d)
}
