package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// A sweep goes through the index batch by batch, its cursor moved past the
// entries kept (looked minus removed), until a batch comes back short.
func TestJanitorSweepsInBatches(t *testing.T) {
	t.Parallel()
	batches := []struct{ removed, looked int }{{200, sweepBatch}, {0, sweepBatch}, {5, 10}}
	var offsets []int
	st := &fakeStore{sweepRuns: func(offset, limit int) (int, int, error) {
		if limit != sweepBatch {
			t.Errorf("limit %d, want %d", limit, sweepBatch)
		}
		b := batches[len(offsets)]
		offsets = append(offsets, offset)
		return b.removed, b.looked, nil
	}}
	j := &janitor{store: st, every: time.Minute, opTimeout: time.Second, clock: systemClock{}, log: discard}
	j.sweep(make(chan struct{}), 0)
	want := []int{0, 300, 800}
	if len(offsets) != len(want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	for i := range want {
		if offsets[i] != want[i] {
			t.Fatalf("offsets %v, want %v", offsets, want)
		}
	}
}

// The janitor finishes the fan-outs pending for longer than their grace
// period, by the worker's clock, batch by batch while batches come back
// full; an error ends the look (the fan-outs left are tried again later).
func TestJanitorRecoversPendingFanoutsInBatches(t *testing.T) {
	t.Parallel()
	clock := fixedClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	takes := []int{fanoutBatch, fanoutBatch, 7}
	calls := 0
	st := &fakeStore{recover: func(now time.Time, grace time.Duration, limit int) (int, int, error) {
		if !now.Equal(clock.t) || grace != engine.FanoutGrace || limit != fanoutBatch {
			t.Errorf("RecoverFanouts(%s, %s, %d), want the clock's time, %s and %d", now, grace, limit, engine.FanoutGrace, fanoutBatch)
		}
		calls++
		return takes[calls-1], takes[calls-1], nil
	}}
	j := &janitor{store: st, fanouts: st, every: time.Minute, opTimeout: time.Second, clock: clock, log: discard}
	j.recoverFanouts(make(chan struct{}))
	if calls != 3 {
		t.Fatalf("%d calls, want 3: two full batches, then a short one", calls)
	}
	calls = 0
	st.recover = func(time.Time, time.Duration, int) (int, int, error) {
		calls++
		return fanoutBatch, 0, errors.New("redis went away")
	}
	j.recoverFanouts(make(chan struct{}))
	if calls != 1 {
		t.Fatalf("%d calls after an error, want 1", calls)
	}
}

// The janitor wakes the runs whose event's pusher died before waking them,
// past engine.EventWakeGrace by the worker's clock, batch by batch while
// batches come back full.
func TestJanitorWakesMissedEventWaitersInBatches(t *testing.T) {
	t.Parallel()
	clock := fixedClock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
	takes := []int{fanoutBatch, 3}
	calls := 0
	st := &fakeStore{recoverWaits: func(now time.Time, grace time.Duration, limit int) (int, int, error) {
		if !now.Equal(clock.t) || grace != engine.EventWakeGrace || limit != fanoutBatch {
			t.Errorf("RecoverEventWaiters(%s, %s, %d), want the clock's time, %s and %d", now, grace, limit, engine.EventWakeGrace, fanoutBatch)
		}
		calls++
		return takes[calls-1], 1, nil
	}}
	j := &janitor{store: st, eventWaits: st, every: time.Minute, opTimeout: time.Second, clock: clock, log: discard}
	j.recoverEventWaits(make(chan struct{}))
	if calls != 2 {
		t.Fatalf("%d calls, want 2: a full batch, then a short one", calls)
	}
}

// A started janitor looks for pending fan-outs at once, before its first
// sweep is due.
func TestJanitorLooksForPendingFanoutsAtStart(t *testing.T) {
	t.Parallel()
	looked := make(chan struct{}, 1)
	st := &fakeStore{recover: func(time.Time, time.Duration, int) (int, int, error) {
		select {
		case looked <- struct{}{}:
		default:
		}
		return 0, 0, nil
	}}
	j := &janitor{store: st, fanouts: st, every: time.Hour, opTimeout: time.Second, clock: systemClock{}, log: discard}
	if err := j.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer j.Stop()
	select {
	case <-looked:
	case <-time.After(10 * time.Second):
		t.Fatal("no look for pending fan-outs after Start")
	}
}
