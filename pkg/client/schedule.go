package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/admission"
)

// Scheduled runs: a trigger with RunAt or RunIn creates its run at once,
// with its idempotency key claimed, and the run waits, queued, until it is
// due; the workers then queue it as any other. See docs/scheduling.md.

// MaxScheduleAheadDefault is how far ahead a run may be scheduled unless
// Options.MaxScheduleAhead says otherwise.
const MaxScheduleAheadDefault = admission.MaxScheduleAheadDefault

// ErrNotScheduled is the Kind of a *StateError saying Reschedule found the
// run no longer waiting for its scheduled time (or never scheduled).
var ErrNotScheduled = errors.New("run is not waiting for a scheduled time")

// RunAt queues the run at t rather than now: the run is created, and its
// idempotency key claimed, when the trigger is made, and it waits, queued
// with RunInfo.ScheduledAt = t, until t. A t at or before now queues it at
// once; one further ahead than Options.MaxScheduleAhead is refused with a
// *task.ConfigError whose Field is "runAt", as is the zero time (and a t
// given with RunIn, or for a task with the debounce strategy). Nothing is
// created then. A ttl or fallback ttl counts from t.
func RunAt(t time.Time) RunOption {
	return func(o *runOptions) { o.schedule = &admission.Schedule{At: &t, In: scheduleIn(o)} }
}

// RunIn queues the run d after the trigger; see RunAt. A negative d, or
// one over Options.MaxScheduleAhead, is refused with a *task.ConfigError
// whose Field is "runIn".
func RunIn(d time.Duration) RunOption {
	return func(o *runOptions) { o.schedule = &admission.Schedule{At: scheduleAt(o), In: &d} }
}

// scheduleAt and scheduleIn keep what an earlier option gave, so that
// giving both is refused rather than one silently winning.
func scheduleAt(o *runOptions) *time.Time {
	if o.schedule == nil {
		return nil
	}
	return o.schedule.At
}

func scheduleIn(o *runOptions) *time.Duration {
	if o.schedule == nil {
		return nil
	}
	return o.schedule.In
}

// Reschedule moves a scheduled run (RunAt, RunIn) that is not yet due to
// at, earlier or later, and returns the run afterwards. Its idempotency
// key's expiry moves by as much, so the key covers it as long after its
// new due time as it did after the old. An at already passed queues it at
// once; the limits are RunAt's (a *task.ConfigError for "runAt"). A run that no longer
// waits (its time came, it is running or ended) or that is waiting for a
// retry or a debounce window gets a *StateError of Kind ErrNotScheduled, a run that does
// not exist an error matching ErrRunNotFound.
func (in *Inspector) Reschedule(ctx context.Context, runID string, at time.Time) (*RunInfo, error) {
	now := in.c.opts.Clock.Now()
	_, d, err := in.c.admission().ScheduleDelay(&admission.Schedule{At: &at}, now)
	if err != nil {
		return nil, err
	}
	octx, cancel := in.c.opCtx(ctx)
	res, err := in.c.store.Reschedule(octx, runID, now.Add(d))
	if err != nil {
		err = in.c.unavailable(octx, err)
	}
	cancel()
	switch {
	case err != nil:
		return nil, err
	case res.Why == "missing":
		return nil, fmt.Errorf("%w: %s", ErrRunNotFound, runID)
	case !res.Moved:
		return nil, &StateError{Kind: ErrNotScheduled, RunID: runID, State: res.Why}
	}
	return in.GetRun(ctx, runID)
}
