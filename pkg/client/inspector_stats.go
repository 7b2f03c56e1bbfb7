package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// RunStatsWindowMax is the longest window RunStats reads: the coarse
// counters are kept about a day.
const RunStatsWindowMax = 24 * time.Hour

// ErrInvalidStatsWindow matches a RunStats window out of range.
var ErrInvalidStatsWindow = errors.New("invalid stats window")

// RunStats is what a namespace's runs did over a window, per step: of
// one task, or of every task summed. Started and ended count attempts, so
// a run retried twice starts and ends three times. Durations are read
// from log-scale buckets (four per power of two), so a percentile is
// within about 12% of the exact one.
type RunStats struct {
	// Task is the task counted, "" for every task.
	Task string
	// Window is how far back the points reach; Step the span of each.
	Window time.Duration
	Step   time.Duration
	// Points are the steps of the window, oldest first, the last one
	// still running.
	Points []RunStatsPoint
	// Total is the window's: its counts summed and its percentiles over
	// every attempt (Time is the window's start).
	Total RunStatsPoint
}

// RunStatsPoint is one step of RunStats.
type RunStatsPoint struct {
	// Time is when the step begins.
	Time time.Time
	// Started counts attempts begun; Ended attempts that ended, as
	// Succeeded, Failed (their run's last) or Retried (their run will be
	// tried again).
	Started   int64
	Ended     int64
	Succeeded int64
	Failed    int64
	Retried   int64
	// Duplicates counts triggers that created no run because their key
	// was held (rejected, attached, signalled or debounced).
	Duplicates int64
	// Wait is how long attempts begun waited in their queue, and Run how
	// long attempts that ended ran: the 50th, 95th and 99th percentiles.
	WaitP50 time.Duration
	WaitP95 time.Duration
	WaitP99 time.Duration
	RunP50  time.Duration
	RunP95  time.Duration
	RunP99  time.Duration
}

// RunStats reads the run statistics of task ("" for every task) over the
// window that ends now: per minute for a window of up to two hours, per
// ten minutes beyond, up to RunStatsWindowMax. The counters are counted
// in memory by the workers (attempts) and the clients (duplicates), added
// to Redis every worker.Options.StatsInterval and Options.StatsInterval,
// and summed over the partitions here (see docs/dashboard.md): the latest
// minute lags by up to that interval. A window out of range is an error
// matching ErrInvalidStatsWindow.
func (in *Inspector) RunStats(ctx context.Context, task string, window time.Duration) (*RunStats, error) {
	if window < time.Minute || window > RunStatsWindowMax {
		return nil, fmt.Errorf("%w: %v, want 1m to %v", ErrInvalidStatsWindow, window, RunStatsWindowMax)
	}
	step := engine.StatsMinute
	if window > 2*time.Hour {
		step = engine.StatsCoarse
	}
	n := int((window + step - 1) / step)
	ctx, cancel := in.c.opCtx(ctx)
	defer cancel()
	slots, err := in.c.store.ReadStats(ctx, in.c.opts.Clock.Now(), step, n)
	if err != nil {
		return nil, in.c.unavailable(ctx, err)
	}
	out := &RunStats{Task: task, Window: window, Step: step, Points: make([]RunStatsPoint, len(slots))}
	total := engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{},
		Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
	for i, sl := range slots {
		sum := engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{},
			Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
		for name, ts := range sl.Tasks {
			if task == "" || name == task {
				sum.Add(ts)
			}
		}
		total.Add(&sum)
		out.Points[i] = statsPoint(sl.Start, &sum)
	}
	if len(slots) > 0 {
		out.Total = statsPoint(slots[0].Start, &total)
	}
	return out, nil
}

// statsPoint sums a span's counts and reads its percentiles.
func statsPoint(at time.Time, s *engine.TaskStats) RunStatsPoint {
	p := RunStatsPoint{
		Time: at, Started: s.Wait.Count(), Succeeded: s.Succeeded.Count(), Failed: s.Failed.Count(),
		Retried: s.Retried.Count(), Duplicates: s.Duplicates,
	}
	p.Ended = p.Succeeded + p.Failed + p.Retried
	ran := engine.StatsHistogram{}
	ran.Add(s.Succeeded)
	ran.Add(s.Failed)
	ran.Add(s.Retried)
	p.WaitP50, p.WaitP95, p.WaitP99 = s.Wait.Quantile(0.5), s.Wait.Quantile(0.95), s.Wait.Quantile(0.99)
	p.RunP50, p.RunP95, p.RunP99 = ran.Quantile(0.5), ran.Quantile(0.95), ran.Quantile(0.99)
	return p
}
