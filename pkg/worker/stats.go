package worker

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/runstats"
)

// statsRecorder adds the run statistics the processor counts in memory
// (rec: queue waits as attempts begin, run times as their outcomes are
// recorded) to Redis every interval, and once more when it stops, each
// flush bounded by opTimeout. A flush that fails is logged and its counts
// kept for the next (see internal/runstats); it never touches a run.
type statsRecorder struct {
	startStop
	rec       *runstats.Recorder
	interval  time.Duration
	opTimeout time.Duration
}

// Start starts the flushes; the first is due one interval later.
func (s *statsRecorder) Start(context.Context) error {
	return s.begin(func(quit <-chan struct{}) { s.rec.Run(quit, s.interval, s.opTimeout) })
}
