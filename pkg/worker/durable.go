package worker

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/client"
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

// suspension ends a handler that waits durably: the value its wait panics
// with, recovered where the handler is called (see call), so that no code
// of the handler runs after it.
type suspension struct {
	until  time.Time // zero: no timeout, only a signal wakes the run
	reason string    // what the run waits for, its Waiting
}

func (s *suspension) Error() string { return "worker: run suspended: " + s.reason }

// waitRecord is what a durable wait stores at its place, once: its kind,
// when it ends (unix ms, 0 for none) and when it began (unix ms).
type waitRecord struct {
	Kind  string `json:"kind"`
	Until int64  `json:"until,omitempty"`
	Since int64  `json:"since,omitempty"`
}

// waitDone is how a signal or event wait ended, stored once so that every
// later run of the handler gets the same answer.
type waitDone struct {
	Signal   *storedSignal     `json:"signal,omitempty"`
	Event    *client.EventInfo `json:"event,omitempty"`
	Cursor   string            `json:"cursor,omitempty"`
	TimedOut bool              `json:"timedOut,omitempty"`
}

// storedSignal is the signal a wait ended with, as its waitDone stores it.
type storedSignal struct {
	ID      string
	Payload json.RawMessage
	Sent    time.Time `json:",omitzero"`
}

// Wait kinds, as recorded.
const (
	waitSleep  = "sleep"
	waitSignal = engine.WaitSignalPrefix
	waitEvent  = engine.WaitEventPrefix
)

// SleepFor sleeps durably for d. The run gives its slot back and waits,
// with status waiting; when d has passed it is queued again and its
// handler runs again, and this call returns nil. The time it wakes is
// fixed by the first run of the handler that reaches this wait (now + d
// then): a later run does not sleep again, so SleepFor(ctx, time.Until(t))
// sleeps until t. It returns an error only when the sleep could not be
// recorded, or a *NondeterminismError.
func SleepFor(ctx Context, d time.Duration) error {
	c, err := durableOf(ctx)
	if err != nil {
		return err
	}
	return c.sleep(c.clock().Add(d))
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
func WaitForSignal(ctx Context, timeout time.Duration) (client.SignalInfo, error) {
	c, err := durableOf(ctx)
	if err != nil {
		return client.SignalInfo{}, err
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
	if c.workerClock != nil {
		return c.workerClock.Now()
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
	rec := waitRecord{Kind: kind, Since: c.clock().UnixMilli()}
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

// waitUntil is when a wait of timeout ends: zero for 0 (no limit). A
// negative timeout is refused, rather than taken for no limit.
func (c *runContext) waitUntil(call string, timeout time.Duration) (time.Time, error) {
	switch {
	case timeout < 0:
		return time.Time{}, fmt.Errorf("worker: %s: timeout %s is negative; use 0 to wait without a limit", call, timeout)
	case timeout == 0:
		return time.Time{}, nil
	}
	return c.clock().Add(timeout), nil
}

func (c *runContext) waitSignal(timeout time.Duration) (client.SignalInfo, error) {
	until, err := c.waitUntil("WaitForSignal", timeout)
	if err != nil {
		return client.SignalInfo{}, err
	}
	n, rec, err := c.nextWait(waitSignal, until)
	if err != nil {
		return client.SignalInfo{}, err
	}
	doneName := waitStepName(n) + "/done"
	finish := func(d waitDone) (client.SignalInfo, error) {
		if d.Cursor != "" {
			c.sigMu.Lock()
			c.sigCursor = d.Cursor
			c.sigMu.Unlock()
		}
		if d.TimedOut || d.Signal == nil {
			return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d for a signal: %w", n, ErrWaitTimeout)
		}
		return client.SignalInfo{SignalID: d.Signal.ID, Payload: d.Signal.Payload, SentAt: d.Signal.Sent}, nil
	}
	// An earlier run of the handler may have ended this wait already.
	if stored, ok, err := c.store.StepResult(c, c.runID, doneName); err != nil {
		return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d: %w", n, err)
	} else if ok {
		var d waitDone
		if err := json.Unmarshal(stored, &d); err != nil {
			return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
		}
		return finish(d)
	}
	c.sigMu.Lock()
	cursor := c.sigCursor
	c.sigMu.Unlock()
	sigs, err := c.store.ReadSignals(c, c.runID, cursor, 1, -1)
	if err != nil {
		return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d: read signals: %w", n, err)
	}
	var d waitDone
	switch {
	case len(sigs) > 0:
		d = waitDone{Signal: &storedSignal{ID: sigs[0].ID, Payload: sigs[0].Payload, Sent: sigs[0].Sent.UTC()}, Cursor: sigs[0].Cursor}
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
		return client.SignalInfo{}, err
	}
	stored, err := c.store.SaveStepResult(c, c.runID, doneName, raw)
	if err != nil {
		return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d: %w", n, err)
	}
	if err := json.Unmarshal(stored, &d); err != nil {
		return client.SignalInfo{}, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
	}
	return finish(d)
}

// eventClockSkew is how much earlier than the wait's beginning an event
// may be stamped and still count: events are stamped by the clock of the
// process that pushed them, the wait's beginning by the worker's.
const eventClockSkew = 2 * time.Second

// eventScanMax bounds the events of the key one run of the handler looks
// through for a match, newest back to the wait's beginning.
const eventScanMax = 10000

// WaitForEvent waits durably for an event of key (pushed with
// events.Ingester.Push, taskq events push or POST /api/v1/events) whose
// payload passes filter, a CEL expression over input (the payload) and
// metadata that yields a bool ("" takes any event of the key), and returns
// it as the Inspector shows it. Events pushed since the wait began count (give or take
// eventClockSkew, 2 s, for the clocks of different hosts). While it waits
// the run gives its slot back, with status waiting ("event <key>"); each
// push of the key queues it again, and its handler's next run looks for a
// match. With timeout > 0 the wait ends after timeout with an error
// matching ErrWaitTimeout; 0 waits without a limit. A filter that does not
// compile, or does not yield a bool, is an error naming it.
func WaitForEvent(ctx Context, key, filter string, timeout time.Duration) (*client.EventInfo, error) {
	c, err := durableOf(ctx)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, errors.New("worker: WaitForEvent: the event key must not be empty")
	}
	match, err := compileEventFilter(filter)
	if err != nil {
		return nil, err
	}
	until, err := c.waitUntil("WaitForEvent", timeout)
	if err != nil {
		return nil, err
	}
	n, rec, err := c.nextWait(waitEvent, until)
	if err != nil {
		return nil, err
	}
	doneName := waitStepName(n) + "/done"
	finish := func(d waitDone) (*client.EventInfo, error) {
		if d.TimedOut || d.Event == nil {
			return nil, fmt.Errorf("worker: durable wait %d for an event of %q: %w", n, key, ErrWaitTimeout)
		}
		return d.Event, nil
	}
	if stored, ok, err := c.store.StepResult(c, c.runID, doneName); err != nil {
		return nil, fmt.Errorf("worker: durable wait %d: %w", n, err)
	} else if ok {
		var d waitDone
		if err := json.Unmarshal(stored, &d); err != nil {
			return nil, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
		}
		return finish(d)
	}
	// Registered before looking, so that an event pushed after the look
	// wakes the run (even before it has suspended: see WakeRuns).
	if err := c.store.AddEventWaiter(c, key, c.runID, c.clock()); err != nil {
		return nil, fmt.Errorf("worker: durable wait %d: register: %w", n, err)
	}
	ev, err := c.firstEvent(key, time.UnixMilli(rec.Since).Add(-eventClockSkew), match)
	if err != nil {
		return nil, fmt.Errorf("worker: durable wait %d for an event of %q: %w", n, key, err)
	}
	var d waitDone
	switch {
	case ev != nil:
		d = waitDone{Event: ev}
	case rec.Until > 0 && !c.clock().Before(time.UnixMilli(rec.Until)):
		d = waitDone{TimedOut: true}
	default:
		var due time.Time
		if rec.Until > 0 {
			due = time.UnixMilli(rec.Until)
		}
		panic(&suspension{until: due, reason: waitEvent + " " + key})
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	stored, err := c.store.SaveStepResult(c, c.runID, doneName, raw)
	if err != nil {
		return nil, fmt.Errorf("worker: durable wait %d: %w", n, err)
	}
	if err := json.Unmarshal(stored, &d); err != nil {
		return nil, fmt.Errorf("worker: durable wait %d: decode its result: %w", n, err)
	}
	return finish(d)
}

// firstEvent returns the oldest event of key stamped at or after since
// that match accepts, or nil.
func (c *runContext) firstEvent(key string, since time.Time, match func(payload, meta []byte) (bool, error)) (*client.EventInfo, error) {
	var ids []string
	var after *engine.IndexEntry
	for len(ids) < eventScanMax {
		page, err := c.store.PageEvents(c, key, after, 100)
		if err != nil {
			return nil, err
		}
		done := len(page) < 100
		for _, e := range page {
			if e.Score < since.UnixMilli() {
				done = true
				break
			}
			ids = append(ids, e.ID)
		}
		if done || len(page) == 0 {
			break
		}
		after = &page[len(page)-1]
	}
	slices.Reverse(ids) // oldest first
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 100)]
		ids = ids[len(chunk):]
		evs, err := c.store.GetEvents(c, chunk)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			ok, err := match(e.Payload, e.Meta)
			if err != nil {
				return nil, err
			}
			if ok {
				ev := &client.EventInfo{ID: e.ID, Key: e.Key, Payload: e.Payload, Metadata: e.Meta, CreatedAt: e.Created.UTC()}
				for _, r := range e.Runs {
					ev.Runs = append(ev.Runs, client.EventTaskRun{Task: r.Task, Outcome: r.Outcome, RunID: r.RunID,
						IdempotencyKey: r.IdempotencyKey, Error: r.Error})
				}
				return ev, nil
			}
		}
	}
	return nil, nil
}
