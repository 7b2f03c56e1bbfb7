package engine_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// NewWorkersView lapses a held run by its holder's lease, at once when the
// holder is dead, and by the default lease when the holder has no record;
// it lists live workers first, then by name.
func TestWorkersViewLapsesByLease(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	workers := []engine.WorkerInfo{
		{WorkerRecord: engine.WorkerRecord{Name: "dead", HeartbeatInterval: time.Second, LeaseDuration: time.Minute},
			LastHeartbeat: now.Add(-time.Hour)},
		{WorkerRecord: engine.WorkerRecord{Name: "live", HeartbeatInterval: time.Second, LeaseDuration: 10 * time.Second},
			LastHeartbeat: now},
	}
	held := []engine.HeldRun{
		{RunID: "fresh", Consumer: "live", Idle: 5 * time.Second},
		{RunID: "stale", Consumer: "live", Idle: 11 * time.Second},
		{RunID: "of-dead", Consumer: "dead", Idle: time.Second},
		{RunID: "gone-recent", Consumer: "gone", Idle: 20 * time.Second},
		{RunID: "gone-old", Consumer: "gone", Idle: 31 * time.Second},
	}
	v := engine.NewWorkersView(now, 30*time.Second, workers, held, false)
	var lapsed []string
	for _, h := range v.Lapsed {
		lapsed = append(lapsed, h.RunID)
	}
	want := []string{"stale", "of-dead", "gone-old"}
	if len(lapsed) != len(want) {
		t.Fatalf("lapsed = %v, want %v", lapsed, want)
	}
	for i := range want {
		if lapsed[i] != want[i] {
			t.Fatalf("lapsed = %v, want %v", lapsed, want)
		}
	}
	if len(v.Workers) != 2 || v.Workers[0].Name != "live" || v.Workers[1].Name != "dead" || !v.Workers[1].Dead {
		t.Fatalf("workers = %+v, want live, then dead", v.Workers)
	}
	if runs := v.Workers[0].Runs; len(runs) != 2 || runs[0].Lapsed || !runs[1].Lapsed {
		t.Fatalf("live worker's runs = %+v, want fresh (held) and stale (lapsed)", runs)
	}
}
