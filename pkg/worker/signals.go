package worker

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/client"
)

// signalBlock is how long one read of a run's signal stream blocks.
const signalBlock = time.Second

// A handler's signals (NextSignal, Signals, WaitForSignal) are
// client.SignalInfo values, as the Inspector lists them: sent with
// client.Signal or RunHandle.Signal, or by a trigger under the signal
// conflict policy. A signal's SignalID is the same on every attempt.

// signalInfo is a signal the store read, as its handler gets it.
func signalInfo(s engine.Signal) client.SignalInfo {
	return client.SignalInfo{SignalID: s.ID, Payload: s.Payload, SentAt: s.Sent.UTC()}
}

// NextSignal blocks until the run's next signal arrives and returns it.
// Signals come in the order they were sent, each once per attempt; a
// redelivered attempt starts again from the first. When the context ends
// it returns the context's cause.
func (c *runContext) NextSignal() (client.SignalInfo, error) {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	for {
		if err := c.Err(); err != nil {
			return client.SignalInfo{}, context.Cause(c)
		}
		sigs, err := c.store.ReadSignals(c, c.runID, c.sigCursor, 1, signalBlock)
		if err != nil {
			if c.Err() != nil {
				return client.SignalInfo{}, context.Cause(c)
			}
			return client.SignalInfo{}, fmt.Errorf("worker: read signals: %w", err)
		}
		if len(sigs) > 0 {
			c.sigCursor = sigs[0].Cursor
			return signalInfo(sigs[0]), nil
		}
	}
}

// Signals iterates the run's signals, in order, until the context ends
// (then the loop ends; read context.Cause for why).
func (c *runContext) Signals() iter.Seq[client.SignalInfo] {
	return func(yield func(client.SignalInfo) bool) {
		for {
			s, err := c.NextSignal()
			if err != nil || !yield(s) {
				return
			}
		}
	}
}
