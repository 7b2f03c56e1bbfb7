package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// pauseFake answers PausedTasks with set (or err) and records DeferRuns.
type pauseFake struct {
	mu       sync.Mutex
	set      map[string]time.Time
	err      error
	deferred []engine.Deferral
}

func (f *pauseFake) PausedTasks(context.Context) (map[string]time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := map[string]time.Time{}
	for k, v := range f.set {
		out[k] = v
	}
	return out, nil
}

func (f *pauseFake) DeferRuns(_ context.Context, ds []engine.Deferral) ([]engine.DeferResult, []error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deferred = append(f.deferred, ds...)
	res := make([]engine.DeferResult, len(ds))
	for i := range res {
		res[i].Held = true
	}
	return res, make([]error, len(ds))
}

// The pauses component reads the paused set at Start, keeps the last set
// when a read fails, and follows a resume; the processor holds back a
// paused task's delivery (deferred with the reason "task paused", due one
// PauseRefresh later, its slot given back) and dispatches the others.
func TestPausesHoldBackDeliveriesOfPausedTasks(t *testing.T) {
	t.Parallel()
	f := &pauseFake{set: map[string]time.Time{"a": time.UnixMilli(1)}}
	clock := systemClock{}
	ps := &pauses{store: f, tasks: []string{"a", "b"}, every: time.Hour, opTimeout: time.Second, clock: clock, log: discard}
	if err := ps.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer ps.Stop()
	if !ps.paused("a") || ps.paused("b") || !slices.Equal(ps.active([]string{"a", "b"}), []string{"b"}) {
		t.Fatalf("after Start: a %v, b %v, active %v", ps.paused("a"), ps.paused("b"), ps.active([]string{"a", "b"}))
	}

	p := &processor{slots: newSlots(2), pauses: ps, base: context.Background()}
	if n := p.slots.take(nil); n != 2 {
		t.Fatalf("took %d slots", n)
	}
	before := clock.Now()
	ok := p.holdPaused([]engine.Delivery{{Task: "a", RunID: "r-a", EntryID: "1-0"}, {Task: "b", RunID: "r-b", EntryID: "2-0"}})
	p.inFlight.Wait()
	if len(ok) != 1 || ok[0].RunID != "r-b" {
		t.Fatalf("dispatched %+v, want r-b only", ok)
	}
	if n := p.slots.takeFree(); n != 1 {
		t.Errorf("%d slots free after the hold, want the held delivery's 1", n)
	}
	f.mu.Lock()
	d := f.deferred
	f.mu.Unlock()
	if len(d) != 1 || d[0].RunID != "r-a" || d[0].Reason != pauseReason || d[0].Due.Before(before.Add(time.Hour-time.Millisecond)) {
		t.Fatalf("deferred %+v, want r-a, %q, due an hour on", d, pauseReason)
	}

	f.mu.Lock()
	f.err = errors.New("redis down")
	f.mu.Unlock()
	if err := ps.refresh(context.Background()); err == nil || !ps.paused("a") {
		t.Fatalf("a failed read: %v, a paused %v; want the last set kept", err, ps.paused("a"))
	}
	f.mu.Lock()
	f.err, f.set = nil, map[string]time.Time{}
	f.mu.Unlock()
	if err := ps.refresh(context.Background()); err != nil || ps.paused("a") {
		t.Fatalf("after resume: %v, a paused %v", err, ps.paused("a"))
	}
	if ok, held := ps.split([]engine.Delivery{{Task: "a"}}); len(ok) != 1 || len(held) != 0 {
		t.Fatalf("split after resume = %v, %v", ok, held)
	}
}
