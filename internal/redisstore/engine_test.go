package redisstore

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// The layout's constants the scripts read are the engine's where the
// engine states them too.
func TestLayoutFollowsTheEngine(t *testing.T) {
	if maxAttemptRecords != engine.MaxAttemptRecords {
		t.Errorf("maxAttemptRecords %d, engine.MaxAttemptRecords %d", maxAttemptRecords, engine.MaxAttemptRecords)
	}
	if statusWaiting != engine.StatusWaiting {
		t.Errorf("statusWaiting %q, engine.StatusWaiting %q", statusWaiting, engine.StatusWaiting)
	}
	if waitSignalPrefix != engine.WaitSignalPrefix || waitEventPrefix != engine.WaitEventPrefix {
		t.Errorf("wait prefixes %q, %q; engine %q, %q", waitSignalPrefix, waitEventPrefix, engine.WaitSignalPrefix,
			engine.WaitEventPrefix)
	}
	spans := []struct {
		ms   int64
		want time.Duration
	}{{statsMinuteMs, engine.StatsMinute}, {statsCoarseMs, engine.StatsCoarse},
		{statsMinuteKeepMs, engine.StatsMinuteKeep}, {statsCoarseKeepMs, engine.StatsCoarseKeep}}
	for _, s := range spans {
		if time.Duration(s.ms)*time.Millisecond != s.want {
			t.Errorf("layout span %d ms, engine %v", s.ms, s.want)
		}
	}
	kinds := map[string]engine.StatsKind{statsWait: engine.StatsKindWait, statsSucceeded: engine.StatsKindSucceeded,
		statsFailed: engine.StatsKindFailed, statsRetried: engine.StatsKindRetried, statsDuplicate: engine.StatsKindDuplicate}
	for field, kind := range kinds {
		if field != string(kind) {
			t.Errorf("layout stats field %q, engine kind %q", field, kind)
		}
	}
}
