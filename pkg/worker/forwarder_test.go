package worker

import (
	"testing"
	"time"
)

// The forwarder goes again at once after a full batch, waits until the
// next retry when it is sooner than forwardInterval (at least 1ms), and
// waits forwardInterval otherwise or after a failure.
func TestForwarderWait(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		promoted int
		err      error
		next     time.Time
		want     time.Duration
	}{
		{"full batch", forwardBatch, nil, time.Time{}, 0},
		{"next retry soon", 3, nil, now.Add(40 * time.Millisecond), 40 * time.Millisecond},
		{"next retry overdue", 3, nil, now.Add(-time.Second), time.Millisecond},
		{"next retry later", 3, nil, now.Add(time.Hour), forwardInterval},
		{"none scheduled", 0, nil, time.Time{}, forwardInterval},
		{"failed", 0, errFake, now, forwardInterval},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{
				promote:   func(int) (int, error) { return tc.promoted, tc.err },
				nextRetry: func() (time.Time, bool) { return tc.next, !tc.next.IsZero() },
			}
			f := &forwarder{store: st, opTimeout: time.Second, clock: fixedClock{now}, log: discard}
			if got := f.forward(); got != tc.want {
				t.Fatalf("wait %s, want %s", got, tc.want)
			}
		})
	}
}
