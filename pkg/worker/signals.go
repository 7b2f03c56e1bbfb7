package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"time"
)

// signalBlock is how long one read of a run's signal stream blocks.
const signalBlock = time.Second

// Signal is a payload sent to a running run (client.Signal, or a trigger
// under the signal conflict policy). ID is the same on every attempt.
type Signal struct {
	ID      string
	Payload json.RawMessage
}

// NextSignal blocks until the run's next signal arrives and returns it.
// Signals come in the order they were sent, each once per attempt; a
// redelivered attempt starts again from the first. When the context ends
// it returns the context's cause.
func (c *runContext) NextSignal() (Signal, error) {
	c.sigMu.Lock()
	defer c.sigMu.Unlock()
	for {
		if err := c.Err(); err != nil {
			return Signal{}, context.Cause(c)
		}
		sigs, err := c.store.ReadSignals(c, c.runID, c.sigCursor, 1, signalBlock)
		if err != nil {
			if c.Err() != nil {
				return Signal{}, context.Cause(c)
			}
			return Signal{}, fmt.Errorf("worker: read signals: %w", err)
		}
		if len(sigs) > 0 {
			c.sigCursor = sigs[0].Cursor
			return Signal{ID: sigs[0].ID, Payload: sigs[0].Payload}, nil
		}
	}
}

// Signals iterates the run's signals, in order, until the context ends
// (then the loop ends; read context.Cause for why).
func (c *runContext) Signals() iter.Seq[Signal] {
	return func(yield func(Signal) bool) {
		for {
			s, err := c.NextSignal()
			if err != nil || !yield(s) {
				return
			}
		}
	}
}
