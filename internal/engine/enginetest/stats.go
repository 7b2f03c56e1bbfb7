package enginetest

import (
	"fmt"
	"maps"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var statsCases = []suiteCase{
	{"RunStatsAreReadBackPerTask", runStats},
	{"QueueStatsCountQueuedAndInFlight", queueStats},
	{"QueueWaitsCountEachReason", queueWaits},
}

func newTaskStats() *engine.TaskStats {
	return &engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{},
		Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
}

// Counts added twice (the expiry asked for with the first only) are read
// back exactly per task, in minutes and coarse spans alike.
func runStats(h *h) {
	now := time.Now()
	m := engine.StatsMinuteOf(now)
	counts := map[engine.StatsCounter]int64{}
	want := map[string]*engine.TaskStats{}
	add := func(minute int64, task string, kind engine.StatsKind, d time.Duration, n int64) {
		c := engine.StatsCounter{Minute: minute, Task: task, Kind: kind, Bucket: engine.StatsBucket(d.Milliseconds())}
		if kind == engine.StatsKindDuplicate {
			c.Bucket = 0
		}
		counts[c] += n
		if want[task] == nil {
			want[task] = newTaskStats()
		}
		w := want[task]
		switch kind {
		case engine.StatsKindDuplicate:
			w.Duplicates += 2 * n
		case engine.StatsKindWait:
			w.Wait[c.Bucket] += 2 * n
		case engine.StatsKindSucceeded:
			w.Succeeded[c.Bucket] += 2 * n
		case engine.StatsKindFailed:
			w.Failed[c.Bucket] += 2 * n
		case engine.StatsKindRetried:
			w.Retried[c.Bucket] += 2 * n
		}
	}
	add(m, "a", engine.StatsKindWait, 10*time.Millisecond, 5)
	add(m, "a", engine.StatsKindSucceeded, 100*time.Millisecond, 4)
	add(m-1, "a", engine.StatsKindSucceeded, 300*time.Millisecond, 1)
	add(m, "a", engine.StatsKindFailed, 3*time.Second, 1)
	add(m, "a", engine.StatsKindRetried, 40*time.Millisecond, 1)
	add(m-1, "a|b", engine.StatsKindWait, 2*time.Second, 1) // a separator in a task's name
	add(m, "b", engine.StatsKindDuplicate, 0, 3)
	add(m, "b", engine.StatsKindWait, time.Millisecond/2, 2)
	if err := h.e.AddRunStats(h.ctx, engine.RunStatsBatch{Counts: counts, Expire: map[int64]bool{m: true, m - 1: true}}); err != nil {
		h.Fatal(err)
	}
	if err := h.e.AddRunStats(h.ctx, engine.RunStatsBatch{Counts: counts}); err != nil {
		h.Fatal(err)
	}
	for _, c := range []struct {
		step time.Duration
		n    int
	}{{engine.StatsMinute, 5}, {engine.StatsCoarse, 2}} {
		slots, err := h.e.ReadStats(h.ctx, now, c.step, c.n)
		if err != nil {
			h.Fatal(err)
		}
		if len(slots) != c.n || !slots[c.n-1].Start.Equal(now.Truncate(c.step)) {
			h.Fatalf("step %v: %d slots, want %d, the last from %v", c.step, len(slots), c.n, now.Truncate(c.step))
		}
		sum := map[string]*engine.TaskStats{}
		for _, sl := range slots {
			for task, ts := range sl.Tasks {
				if sum[task] == nil {
					sum[task] = newTaskStats()
				}
				sum[task].Add(ts)
			}
		}
		if len(sum) != len(want) {
			h.Fatalf("step %v: tasks %v, want %v", c.step, sum, want)
		}
		for task, w := range want {
			g := sum[task]
			if g == nil || g.Duplicates != w.Duplicates || !maps.Equal(g.Wait, w.Wait) || !maps.Equal(g.Succeeded, w.Succeeded) ||
				!maps.Equal(g.Failed, w.Failed) || !maps.Equal(g.Retried, w.Retried) {
				h.Fatalf("step %v, task %q: read %+v, want %+v", c.step, task, g, *w)
			}
		}
	}
}

// QueueStats counts undelivered entries as queued and delivered,
// unfinished ones as in flight, and dates the oldest undelivered one.
func queueStats(h *h) {
	stats := func() engine.QueueStat {
		h.Helper()
		m, err := h.e.QueueStats(h.ctx, []string{"q", "none"})
		if err != nil {
			h.Fatal(err)
		}
		if m["none"] != (engine.QueueStat{}) {
			h.Fatalf("a task with nothing queued: %+v", m["none"])
		}
		return m["q"]
	}
	before := time.Now().Add(-time.Second)
	first := []*engine.EnqueueParams{h.params("q", "a", engine.StrategyStatus), h.params("q", "b", engine.StrategyStatus)}
	for _, p := range first {
		h.enqueue(p)
	}
	if s := stats(); s.Queued != 2 || s.InFlight != 0 || s.Oldest.Before(before) || s.Oldest.After(time.Now().Add(time.Second)) {
		h.Fatalf("two queued, before any read: %+v", s)
	}
	ds := h.read("q", "c1")
	if len(ds) != 2 {
		h.Fatalf("%d deliveries", len(ds))
	}
	second := []*engine.EnqueueParams{h.params("q", "c", engine.StrategyStatus), h.params("q", "d", engine.StrategyStatus)}
	for _, p := range second {
		h.enqueue(p)
	}
	if s := stats(); s.Queued != 2 || s.InFlight != 2 || s.Oldest.IsZero() {
		h.Fatalf("two delivered, two queued: %+v", s)
	}
	if r, err := h.e.Cancel(h.ctx, second[0].RunID, "test", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	if s := stats(); s.Queued != 1 || s.InFlight != 2 {
		h.Fatalf("a queued run cancelled: %+v, want 1 queued, 2 in flight", s)
	}
	st := h.start("c1", ds[0])
	h.finish(h.outcome(ds[0], st, engine.OutcomeSucceeded, "{}"))
	if s := stats(); s.Queued != 1 || s.InFlight != 1 {
		h.Fatalf("one finished: %+v, want 1 queued, 1 in flight", s)
	}
	h.read("q", "c1")
	if s := stats(); s.Queued != 0 || s.InFlight != 2 || !s.Oldest.IsZero() {
		h.Fatalf("all delivered: %+v, want none queued, 2 in flight", s)
	}
}

// QueueWaits tells the runs held out of their queues apart: scheduled,
// deferred by a rate limit, parked by a concurrency group, retrying.
func queueWaits(h *h) {
	mk := func(task string, delay time.Duration) *engine.EnqueueParams {
		p := h.params(task, "", engine.StrategyNone)
		p.Key, p.Strategy, p.Hold, p.Retries = h.id("k"), engine.StrategyStatus, time.Hour, 3
		p.Delay = delay
		return p
	}
	var ps []*engine.EnqueueParams
	for range 3 {
		ps = append(ps, mk("a", time.Hour))
	}
	for range 8 {
		ps = append(ps, mk("a", 0))
	}
	ps = append(ps, mk("b", time.Hour))
	if _, errs := h.e.EnqueueBatch(h.ctx, ps); fmt.Sprint(errs) != fmt.Sprint(make([]error, len(ps))) {
		h.Fatal(errs)
	}
	ds := h.read("a", "w1")
	if len(ds) != 8 {
		h.Fatalf("read %d deliveries, want 8", len(ds))
	}
	for _, d := range ds[:2] {
		st := h.start("w1", d)
		fp := h.outcome(d, st, engine.OutcomeRetry, "again")
		fp.RetryAt = h.now.Add(time.Hour)
		if r := h.finish(fp); !r.Written {
			h.Fatalf("retry = %+v", r)
		}
	}
	if _, errs := h.e.DeferRuns(h.ctx, []engine.Deferral{{Delivery: ds[2], Due: h.now.Add(time.Hour), Reason: `rate limit "r"`},
		{Delivery: ds[3], Due: h.now.Add(time.Hour), Reason: `rate limit "r"`}}); errs[0] != nil || errs[1] != nil {
		h.Fatal(errs)
	}
	if _, errs := h.e.Park(h.ctx, h.now.Add(time.Hour), []engine.ParkParams{
		{RunID: ds[4].RunID, Task: "a", EntryID: ds[4].EntryID, Reason: "group g", Group: "g"},
		{RunID: ds[5].RunID, Task: "a", EntryID: ds[5].EntryID, Reason: "group g", Group: "g"}}); errs[0] != nil || errs[1] != nil {
		h.Fatal(errs)
	}
	got, truncated, err := h.e.QueueWaits(h.ctx)
	if err != nil || truncated {
		h.Fatalf("QueueWaits: %v, truncated %v", err, truncated)
	}
	want := map[string]engine.QueueWait{"a": {Scheduled: 3, RateLimited: 2, Concurrency: 2, Retrying: 2}, "b": {Scheduled: 1}}
	if !maps.Equal(got, want) {
		h.Fatalf("QueueWaits = %+v, want %+v", got, want)
	}
}
