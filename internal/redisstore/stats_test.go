package redisstore_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// Counts added with AddRunStats, twice (the expiry set with the first
// only), read back exactly per task, summed with what another partition
// holds, in the minute hashes and the coarse ones alike, each with its
// expiry.
func TestRunStatsCountKnownRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 4)
		parts, err := s.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		m := engine.StatsMinuteOf(now)
		counts := map[engine.StatsCounter]int64{}
		want := map[string]*engine.TaskStats{}
		got := func(task string) *engine.TaskStats {
			if want[task] == nil {
				want[task] = &engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{},
					Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
			}
			return want[task]
		}
		add := func(minute int64, task string, kind engine.StatsKind, d time.Duration, n int64) {
			c := engine.StatsCounter{Minute: minute, Task: task, Kind: kind, Bucket: engine.StatsBucket(d.Milliseconds())}
			if kind == engine.StatsKindDuplicate {
				c.Bucket = 0
			}
			counts[c] += n
			w := got(task)
			switch kind {
			case engine.StatsKindDuplicate:
				w.Duplicates += 2 * n // added twice below
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
		add(m-1, "a|b", engine.StatsKindWait, 2*time.Second, 1) // the separator in a task's name
		add(m, "b", engine.StatsKindDuplicate, 0, 3)
		add(m, "b", engine.StatsKindWait, time.Millisecond/2, 2)
		if err := s.AddRunStats(ctx, engine.RunStatsBatch{Counts: counts, Expire: map[int64]bool{m: true, m - 1: true}}); err != nil {
			t.Fatal(err)
		}
		if err := s.AddRunStats(ctx, engine.RunStatsBatch{Counts: counts}); err != nil {
			t.Fatal(err)
		}
		// Another partition's counts are summed with the home one's.
		other, _ := parts.StatsKeys(parts.Count()-1, now)
		if err := b.Client.HIncrBy(ctx, other, "b|D", 7).Err(); err != nil {
			t.Fatal(err)
		}
		want["b"].Duplicates += 7
		for _, c := range []struct {
			step time.Duration
			n    int
		}{{engine.StatsMinute, 5}, {engine.StatsCoarse, 2}} {
			slots, err := s.ReadStats(ctx, now, c.step, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(slots) != c.n || !slots[c.n-1].Start.Equal(now.Truncate(c.step)) {
				t.Fatalf("step %v: %d slots, the last from %v; want %d, the last from %v", c.step, len(slots),
					slots[len(slots)-1].Start, c.n, now.Truncate(c.step))
			}
			sum := map[string]*engine.TaskStats{}
			for _, sl := range slots {
				for task, ts := range sl.Tasks {
					if sum[task] == nil {
						sum[task] = &engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{},
							Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
					}
					sum[task].Add(ts)
				}
			}
			if c.step == engine.StatsCoarse {
				want["b"].Duplicates -= 7 // written to the other partition's minute hash only
			}
			for task, w := range want {
				g := sum[task]
				if g == nil {
					t.Fatalf("step %v: no statistics of task %q", c.step, task)
				}
				if g.Duplicates != w.Duplicates || !maps.Equal(g.Wait, w.Wait) || !maps.Equal(g.Succeeded, w.Succeeded) ||
					!maps.Equal(g.Failed, w.Failed) || !maps.Equal(g.Retried, w.Retried) {
					t.Errorf("step %v, task %q: read %+v, want %+v", c.step, task, *g, *w)
				}
			}
			if len(sum) != len(want) {
				t.Errorf("step %v: tasks %v, want %v", c.step, sum, want)
			}
		}
		// Every hash AddRunStats wrote has its expiry: at most its span
		// and its keep from now.
		keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, key := range keys {
			limit := engine.StatsCoarse + engine.StatsCoarseKeep
			switch {
			case key == other:
				continue
			case strings.Contains(key, ":stats:m:"):
				limit = engine.StatsMinute + engine.StatsMinuteKeep
			case !strings.Contains(key, ":stats:c:"):
				continue
			}
			n++
			ttl, err := b.Client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > limit+time.Minute {
				t.Errorf("%s: TTL %v, want one within %v", key, ttl, limit)
			}
		}
		if n < 3 {
			t.Errorf("%d statistics hashes with expiries, want two minutes' and at least one coarse: %v", n, keys)
		}
	})
}

// IsRunStats names a partition's own statistics hashes, the minute ones
// and the coarse ones, and nothing else: not another partition's, and not
// the keys of runs, streams or workers, whatever their names hold.
func TestIsRunStatsNamesTheStatisticsHashesOnly(t *testing.T) {
	ctx := context.Background()
	b := redistest.Mini(t)
	s := redisstore.NewPartitioned(b.Client, b.Namespace, 2)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	home, other := parts.Keys(0), parts.Keys(1)
	minute, coarse := parts.StatsKeys(0, now)
	otherMinute, _ := parts.StatsKeys(1, now)
	for _, c := range []struct {
		key  string
		want bool
	}{
		{minute, true},
		{coarse, true},
		{otherMinute, false},
		{home.Run("stats:m:1"), false},
		{home.Stream("stats:c:1"), false},
		{home.Worker("w1"), false},
		{home.Prefix() + "stats", false},
	} {
		if got := home.IsRunStats(c.key); got != c.want {
			t.Errorf("IsRunStats(%q) = %v, want %v", c.key, got, c.want)
		}
	}
	if !other.IsRunStats(otherMinute) {
		t.Errorf("partition 1's IsRunStats(%q) = false, want true", otherMinute)
	}
}

// The buckets are log-scale, four a power of two, and each duration lies
// within its bucket's bounds.
func TestStatsBucketBounds(t *testing.T) {
	prev := -1
	for ms := int64(1); ms < 1<<20; ms = ms*5/4 + 1 {
		b := engine.StatsBucket(ms)
		lo, hi := engine.StatsBucketBounds(b)
		if float64(ms) < lo || float64(ms) >= hi {
			t.Fatalf("%d ms in bucket %d [%v, %v)", ms, b, lo, hi)
		}
		if b < prev {
			t.Fatalf("%d ms in bucket %d, below the previous %d", ms, b, prev)
		}
		if hi/lo > 1.26 {
			t.Fatalf("bucket %d [%v, %v) spans more than a quarter power of two", b, lo, hi)
		}
		prev = b
	}
	if b := engine.StatsBucket(0); b != 0 {
		t.Fatalf("0 ms in bucket %d", b)
	}
}

// Percentiles of known durations, 1 to 1000 ms, fall in the buckets of
// the durations at those ranks.
func TestStatsQuantiles(t *testing.T) {
	h := engine.StatsHistogram{}
	for ms := int64(1); ms <= 1000; ms++ {
		h[engine.StatsBucket(ms)]++
	}
	for _, c := range []struct {
		q  float64
		ms int64
	}{{0.5, 500}, {0.95, 950}, {0.99, 990}, {1, 1000}} {
		got := h.Quantile(c.q)
		lo, hi := engine.StatsBucketBounds(engine.StatsBucket(c.ms))
		if ms := float64(got) / float64(time.Millisecond); ms < lo || ms > hi {
			t.Errorf("p%v = %v, want within the bucket of %d ms, [%v, %v)", c.q*100, got, c.ms, lo, hi)
		}
	}
	if got := (engine.StatsHistogram{}).Quantile(0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}
