package worker

import (
	"testing"
	"time"
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
