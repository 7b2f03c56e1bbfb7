package redisstore_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// QueueStats counts a task's undelivered entries as queued and its
// delivered, unacknowledged ones as in flight, dates the first undelivered
// entry, and keeps counting right once an undelivered entry is deleted
// (after which Redis cannot tell the group's lag).
func TestQueueStatsCountsQueuedAndInFlight(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		stats := func() engine.QueueStat {
			t.Helper()
			m, err := f.s.QueueStats(f.ctx, []string{"q", "none"})
			if err != nil {
				t.Fatal(err)
			}
			if m["none"] != (engine.QueueStat{}) {
				t.Fatalf("a task with no stream: %+v", m["none"])
			}
			return m["q"]
		}
		ps := f.statusRuns("q", "a", "b", "c", "d")
		for _, p := range ps {
			f.enqueue(p)
		}
		ids, err := b.Client.XRange(f.ctx, f.k.Stream("q"), "-", "+").Result()
		if err != nil || len(ids) != 4 {
			t.Fatalf("stream entries %v, %v", ids, err)
		}
		at := func(id string) time.Time {
			ms, _ := strconv.ParseInt(strings.SplitN(id, "-", 2)[0], 10, 64)
			return time.UnixMilli(ms)
		}
		// No worker has created the group yet: every entry is queued.
		if s := stats(); s.Queued != 4 || s.InFlight != 0 || !s.Oldest.Equal(at(ids[0].ID)) {
			t.Fatalf("before any group: %+v, want 4 queued since %v", s, at(ids[0].ID))
		}
		if err := f.s.EnsureGroup(f.ctx, "q"); err != nil {
			t.Fatal(err)
		}
		var got []engine.Delivery
		for range 2 {
			ds, err := f.s.ReadGroup(f.ctx, 0, "c1", []string{"q"}, 1, 0)
			if err != nil || len(ds) != 1 {
				t.Fatalf("read %v, %v", ds, err)
			}
			got = append(got, ds...)
		}
		if s := stats(); s.Queued != 2 || s.InFlight != 2 || !s.Oldest.Equal(at(ids[2].ID)) {
			t.Fatalf("two delivered: %+v, want 2 queued since %v and 2 in flight", s, at(ids[2].ID))
		}
		// Cancelling a queued run deletes its undelivered entry.
		if r, err := f.s.Cancel(f.ctx, ps[2].RunID, "test", f.now); err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		if s := stats(); s.Queued != 1 || s.InFlight != 2 || !s.Oldest.Equal(at(ids[3].ID)) {
			t.Fatalf("one queued run cancelled: %+v, want 1 queued since %v and 2 in flight", s, at(ids[3].ID))
		}
		f.start(got[0], "c1")
		if r := f.finish(got[0].RunID, 1, engine.OutcomeSucceeded, "{}"); !r.Written {
			t.Fatal("finish not written")
		}
		if s := stats(); s.Queued != 1 || s.InFlight != 1 {
			t.Fatalf("one finished: %+v, want 1 queued and 1 in flight", s)
		}
		if ds, err := f.s.ReadGroup(f.ctx, 0, "c1", []string{"q"}, 10, 0); err != nil || len(ds) != 1 {
			t.Fatalf("read %v, %v", ds, err)
		}
		if s := stats(); s.Queued != 0 || s.InFlight != 2 || !s.Oldest.IsZero() {
			t.Fatalf("all delivered: %+v, want none queued and 2 in flight", s)
		}
	})
}
