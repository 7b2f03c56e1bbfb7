package worker

import (
	"testing"
	"time"
)

// The forwarder goes again at once after a full batch, waits until the
// next retry when it is sooner than forwardInterval (at least 1ms), and
// waits forwardInterval otherwise or after a failure; with several
// partitions, for the soonest of them.
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
				promote: func(int, int) (int, time.Time, error) { return tc.promoted, tc.next, tc.err },
			}
			f := &forwarder{store: st, opTimeout: time.Second, clock: fixedClock{now}, log: discard}
			if got := f.forward(); got != tc.want {
				t.Fatalf("wait %s, want %s", got, tc.want)
			}
			// The same in partition 2 of 3, the others with nothing due.
			var seen [3]bool
			st.promote = func(part, _ int) (int, time.Time, error) {
				seen[part] = true
				if part == 2 {
					return tc.promoted, tc.next, tc.err
				}
				return 0, time.Time{}, nil
			}
			f.partitions = 3
			if got := f.forward(); got != tc.want || seen != [3]bool{true, true, true} {
				t.Fatalf("3 partitions: wait %s, want %s; partitions promoted %v", got, tc.want, seen)
			}
		})
	}
}
