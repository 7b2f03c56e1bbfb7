package faulttest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// Task names. Each claims keys with its own prefix, so keys of different
// tasks never collide.
const (
	TaskStatus   = "fault.status"   // status strategy: key held while the run is active
	TaskTTL      = "fault.ttl"      // ttl strategy
	TaskRetain   = "fault.retain"   // status strategy that keeps the key a while after the end
	TaskPlain    = "fault.plain"    // no idempotency key
	TaskDebounce = "fault.debounce" // debounce: runs once its key has been quiet for a window
)

// KeyPrefix maps each deduplicated task to the prefix its expression puts
// before input.key.
var KeyPrefix = map[string]string{TaskStatus: "s:", TaskTTL: "t:", TaskRetain: "r:", TaskDebounce: "d:"}

// TaskConfig sets the durations of the tasks. Zero values mean defaults.
type TaskConfig struct {
	TTL         time.Duration // ttl of TaskTTL (default 2s)
	FallbackTTL time.Duration // fallback ttl of the status tasks (default 1m)
	Retain      time.Duration // retain of TaskRetain (default 1s)
	Window      time.Duration // debounce window of TaskDebounce (default 300ms)
	Retries     int           // retries of every task (default 2)
}

func (c TaskConfig) withDefaults() TaskConfig {
	if c.TTL == 0 {
		c.TTL = 2 * time.Second
	}
	if c.FallbackTTL == 0 {
		c.FallbackTTL = time.Minute
	}
	if c.Retain == 0 {
		c.Retain = time.Second
	}
	if c.Window == 0 {
		c.Window = 300 * time.Millisecond
	}
	if c.Retries == 0 {
		c.Retries = 2
	}
	return c
}

// Definitions returns the five tasks, TaskPlain fourth.
func Definitions(c TaskConfig) ([]*task.Definition, error) {
	c = c.withDefaults()
	backoff := task.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Factor: 2}
	specs := []struct {
		name string
		idem *task.Idempotency
	}{
		{TaskStatus, task.Status(`"s:" + input.key`, c.FallbackTTL)},
		{TaskTTL, task.TTL(`"t:" + input.key`, c.TTL)},
		{TaskRetain, task.Status(`"r:" + input.key`, c.FallbackTTL).WithRetain(c.Retain)},
		{TaskPlain, nil},
		{TaskDebounce, task.Debounce(`"d:" + input.key`, c.Window)},
	}
	defs := make([]*task.Definition, 0, len(specs))
	for _, s := range specs {
		d, err := task.NewDefinition(s.name, task.Options{Idempotency: s.idem, Retries: c.Retries, Backoff: backoff})
		if err != nil {
			return nil, err
		}
		defs = append(defs, d)
	}
	return defs, nil
}

// Modes of Input.
const (
	ModeOK    = ""      // return at once
	ModeSleep = "sleep" // sleep SleepMs (until cancelled)
	ModeFlaky = "flaky" // fail the first FailTimes attempts, then succeed
	ModeFail  = "fail"  // always fail
	ModeHold  = "hold"  // block until the run's context ends
)

// Input is the input of every task.
type Input struct {
	// Op names the trigger uniquely; the history ties the trigger to its
	// run by it.
	Op        string `json:"op"`
	Key       string `json:"key"`
	Mode      string `json:"mode,omitempty"`
	SleepMs   int    `json:"sleepMs,omitempty"`
	FailTimes int    `json:"failTimes,omitempty"`
}

// Output is the result of every task: who ran which attempt.
type Output struct {
	Op      string `json:"op"`
	RunID   string `json:"runId"`
	Worker  string `json:"worker"`
	Attempt int    `json:"attempt"`
}

// ErrInjected is the failure of ModeFlaky and ModeFail attempts.
var ErrInjected = errors.New("injected failure")

// Handle runs one attempt as Input.Mode says.
func Handle(ctx worker.Context, workerName string, in Input) (Output, error) {
	out := Output{Op: in.Op, RunID: ctx.RunID(), Worker: workerName, Attempt: ctx.Attempt()}
	switch in.Mode {
	case ModeSleep:
		select {
		case <-time.After(time.Duration(in.SleepMs) * time.Millisecond):
		case <-ctx.Done():
			return out, context.Cause(ctx)
		}
	case ModeFlaky:
		if ctx.Attempt() <= in.FailTimes {
			return out, fmt.Errorf("attempt %d: %w", ctx.Attempt(), ErrInjected)
		}
	case ModeFail:
		return out, ErrInjected
	case ModeHold:
		<-ctx.Done()
		return out, context.Cause(ctx)
	}
	return out, nil
}
