package runstats

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// fakeStore takes batches, or fails them while fail is set.
type fakeStore struct {
	fail    bool
	batches []engine.RunStatsBatch
}

func (f *fakeStore) AddRunStats(_ context.Context, b engine.RunStatsBatch) error {
	if f.fail {
		return errors.New("redis down")
	}
	f.batches = append(f.batches, b)
	return nil
}

var t0 = time.Date(2026, 12, 5, 14, 0, 30, 0, time.UTC)

// A flush sends each counter once, summed, and the expiry of a minute
// only with the first flush that writes it.
func TestFlushSumsAndExpiresOnce(t *testing.T) {
	st := &fakeStore{}
	r := New(st, nil)
	r.Wait(t0, "a", 10*time.Millisecond)
	r.Wait(t0.Add(time.Second), "a", 10*time.Millisecond)
	r.Ran(t0, "a", engine.OutcomeRetry, time.Second)
	r.Duplicate(t0, "b")
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.Duplicate(t0, "b")
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := r.Flush(context.Background()); err != nil { // nothing to send
		t.Fatal(err)
	}
	m := engine.StatsMinuteOf(t0)
	if len(st.batches) != 2 {
		t.Fatalf("%d batches, want 2", len(st.batches))
	}
	first, second := st.batches[0], st.batches[1]
	wait := engine.StatsCounter{Minute: m, Task: "a", Kind: engine.StatsKindWait, Bucket: engine.StatsBucket(10)}
	retried := engine.StatsCounter{Minute: m, Task: "a", Kind: engine.StatsKindRetried, Bucket: engine.StatsBucket(1000)}
	dup := engine.StatsCounter{Minute: m, Task: "b", Kind: engine.StatsKindDuplicate}
	if len(first.Counts) != 3 || first.Counts[wait] != 2 || first.Counts[retried] != 1 || first.Counts[dup] != 1 || !first.Expire[m] {
		t.Errorf("first batch %+v", first)
	}
	if len(second.Counts) != 1 || second.Counts[dup] != 1 || len(second.Expire) != 0 {
		t.Errorf("second batch %+v, want the duplicate alone and no expiry", second)
	}
}

// Counts a failed flush could not write are sent with the next one, and
// at most MaxMinutes minutes of them are kept: the oldest are dropped.
func TestFailedFlushKeepsBoundedCounts(t *testing.T) {
	st := &fakeStore{fail: true}
	r := New(st, nil)
	for i := range MaxMinutes + 2 {
		r.Duplicate(t0.Add(time.Duration(i)*time.Minute), "a")
		if err := r.Flush(context.Background()); err == nil {
			t.Fatal("a flush to a failing store succeeded")
		}
	}
	r.Duplicate(t0, "a") // older than every minute kept
	st.fail = false
	if err := r.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(st.batches) != 1 {
		t.Fatalf("%d batches, want 1", len(st.batches))
	}
	b := st.batches[0]
	if len(b.Counts) != MaxMinutes || len(b.Expire) != MaxMinutes {
		t.Fatalf("batch %+v: want the last %d minutes", b, MaxMinutes)
	}
	for i := 2; i < MaxMinutes+2; i++ {
		m := engine.StatsMinuteOf(t0.Add(time.Duration(i) * time.Minute))
		if b.Counts[engine.StatsCounter{Minute: m, Task: "a", Kind: engine.StatsKindDuplicate}] != 1 || !b.Expire[m] {
			t.Errorf("minute %d: batch %+v", i, b)
		}
	}
}

// A nil Recorder counts nothing and does not panic.
func TestNilRecorder(t *testing.T) {
	var r *Recorder
	r.Wait(t0, "a", time.Second)
	r.Ran(t0, "a", engine.OutcomeSucceeded, time.Second)
	r.Duplicate(t0, "a")
}
