package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// entryTime is the time a stream entry ID names.
func entryTime(t *testing.T, id string) time.Time {
	ms, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil {
		t.Fatalf("entry ID %q: %v", id, err)
	}
	return time.UnixMilli(n)
}

// After known runs, spread over the partitions, the statistics read back
// exactly per task: duplicates, the queue wait of every attempt begun (by
// start.lua or by finish.lua), and how long each ran under its outcome,
// in the minute hashes and the coarse ones alike, each with its expiry.
func TestRunStatsCountKnownRuns(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 4)
		type plan struct {
			task    string
			outcome redisstore.Outcome
			wait    time.Duration
			ran     time.Duration
			begin   bool // begun by finish.lua rather than start.lua
		}
		plans := map[string]plan{}
		var ps []*redisstore.EnqueueParams
		add := func(id string, p plan) {
			plans[id] = p
			ps = append(ps, &redisstore.EnqueueParams{RunID: id, Task: p.task, Input: []byte(`{}`), Meta: []byte(`{}`),
				Key: "k-" + id, Strategy: redisstore.StrategyStatus, Hold: time.Hour, Retries: 1, MaxDeliveries: 5,
				Retention: time.Hour, Now: time.Now()})
		}
		for i := range 5 {
			add(fmt.Sprint("a-ok-", i), plan{"a", redisstore.OutcomeSucceeded, time.Duration(10*(i+1)) * time.Millisecond,
				time.Duration(100*(i+1)) * time.Millisecond, false})
		}
		add("a-fail-0", plan{"a", redisstore.OutcomeFailed, 7 * time.Millisecond, 3 * time.Second, false})
		add("a-fail-1", plan{"a", redisstore.OutcomeFailed, 9 * time.Millisecond, 5 * time.Second, true})
		add("a-retry", plan{"a", redisstore.OutcomeRetry, 2 * time.Second, 40 * time.Millisecond, false})
		add("b-ok", plan{"b", redisstore.OutcomeSucceeded, 300 * time.Millisecond, 20 * time.Millisecond, true})
		add("b-retry", plan{"b", redisstore.OutcomeRetry, 1 * time.Millisecond, 70 * time.Millisecond, true})
		if _, errs := s.EnqueueBatch(ctx, ps); errs[0] != nil {
			t.Fatal(errs[0])
		}
		for _, task := range []string{"a", "b"} {
			if err := s.EnsureGroup(ctx, task); err != nil {
				t.Fatal(err)
			}
		}
		// Duplicates: three of a's keys and one of b's, one call.
		var dups []*redisstore.EnqueueParams
		for _, id := range []string{"a-ok-0", "a-ok-1", "a-fail-0", "b-ok"} {
			p := *ps[0]
			p.RunID, p.Task, p.Key = "dup-"+id, plans[id].task, "k-"+id
			dups = append(dups, &p)
		}
		res, errs := s.EnqueueBatch(ctx, dups)
		for i := range dups {
			if errs[i] != nil || res[i].Accepted {
				t.Fatalf("duplicate %d = %+v, %v", i, res[i], errs[i])
			}
		}
		parts, err := s.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]*redisstore.TaskStats{}
		got := func(task string) *redisstore.TaskStats {
			if want[task] == nil {
				want[task] = &redisstore.TaskStats{Wait: redisstore.StatsHistogram{}, Succeeded: redisstore.StatsHistogram{},
					Failed: redisstore.StatsHistogram{}, Retried: redisstore.StatsHistogram{}}
			}
			return want[task]
		}
		want["a"], want["b"] = got("a"), got("b")
		want["a"].Duplicates, want["b"].Duplicates = 3, 1
		var last time.Time
		seen, used := 0, map[int]bool{}
		for part := range parts.Count() {
			ds, err := s.ReadGroup(ctx, part, "w1", []string{"a", "b"}, 100, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) > 0 {
				used[part] = true
			}
			for _, d := range ds {
				seen++
				p := plans[strings.SplitN(d.RunID, ".", 2)[0]]
				at := entryTime(t, d.EntryID).Add(p.wait)
				end := at.Add(p.ran)
				if end.After(last) {
					last = end
				}
				fp := &redisstore.FinishParams{RunID: d.RunID, Outcome: p.outcome, Payload: []byte(`{}`), Now: end,
					RetryAt: end.Add(time.Hour), Task: d.Task, EntryID: d.EntryID, Spec: d.Spec}
				if p.begin {
					fp.Attempt, fp.Began, fp.Consumer = d.Spec.Attempts+1, at, "w1"
				} else {
					st, err := s.Start(ctx, &redisstore.StartParams{RunID: d.RunID, Task: d.Task, EntryID: d.EntryID, Consumer: "w1", Now: at})
					if err != nil || !st.Started {
						t.Fatalf("start %s = %+v, %v", d.RunID, st, err)
					}
					fp.Attempt, fp.Spec = st.Attempt, st.Spec
				}
				if fr, err := s.Finish(ctx, fp); err != nil || !fr.Written {
					t.Fatalf("finish %s = %+v, %v", d.RunID, fr, err)
				}
				w := got(p.task)
				w.Wait[redisstore.StatsBucket(p.wait.Milliseconds())]++
				h := map[redisstore.Outcome]redisstore.StatsHistogram{redisstore.OutcomeSucceeded: w.Succeeded,
					redisstore.OutcomeFailed: w.Failed, redisstore.OutcomeRetry: w.Retried}[p.outcome]
				h[redisstore.StatsBucket(p.ran.Milliseconds())]++
			}
		}
		if seen != len(plans) {
			t.Fatalf("read %d deliveries, want %d", seen, len(plans))
		}
		if len(used) < 2 {
			t.Fatalf("runs in %d partitions: the test wants them spread", len(used))
		}
		for _, c := range []struct {
			step time.Duration
			n    int
		}{{redisstore.StatsMinute, 5}, {redisstore.StatsCoarse, 2}} {
			slots, err := s.ReadStats(ctx, last, c.step, c.n)
			if err != nil {
				t.Fatal(err)
			}
			if len(slots) != c.n || !slots[c.n-1].Start.Equal(last.Truncate(c.step)) {
				t.Fatalf("step %v: %d slots, the last from %v; want %d, the last from %v", c.step, len(slots),
					slots[len(slots)-1].Start, c.n, last.Truncate(c.step))
			}
			sum := map[string]*redisstore.TaskStats{}
			for _, sl := range slots {
				for task, ts := range sl.Tasks {
					if sum[task] == nil {
						sum[task] = &redisstore.TaskStats{Wait: redisstore.StatsHistogram{}, Succeeded: redisstore.StatsHistogram{},
							Failed: redisstore.StatsHistogram{}, Retried: redisstore.StatsHistogram{}}
					}
					sum[task].Add(ts)
				}
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
				t.Errorf("step %v: tasks %v, want a and b", c.step, sum)
			}
		}
		// Every hash written has its expiry: at most its span and its
		// keep from now; the minute hashes in each partition with runs.
		keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		minutes := map[int]bool{}
		for _, key := range keys {
			limit := redisstore.StatsCoarse + redisstore.StatsCoarseKeep
			switch {
			case strings.Contains(key, ":stats:m:"):
				limit = redisstore.StatsMinute + redisstore.StatsMinuteKeep
				for part := range used {
					if m, _ := parts.StatsKeys(part, last); strings.HasPrefix(key, m[:strings.LastIndex(m, ":")]) {
						minutes[part] = true
					}
				}
			case !strings.Contains(key, ":stats:c:"):
				continue
			}
			ttl, err := b.Client.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > limit+time.Minute {
				t.Errorf("%s: TTL %v, want one within %v", key, ttl, limit)
			}
		}
		if len(minutes) != len(used) {
			t.Errorf("minute hashes in partitions %v, want %v", minutes, used)
		}
	})
}

// The buckets are log-scale, four a power of two, and each duration lies
// within its bucket's bounds.
func TestStatsBucketBounds(t *testing.T) {
	prev := -1
	for ms := int64(1); ms < 1<<20; ms = ms*5/4 + 1 {
		b := redisstore.StatsBucket(ms)
		lo, hi := redisstore.StatsBucketBounds(b)
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
	if b := redisstore.StatsBucket(0); b != 0 {
		t.Fatalf("0 ms in bucket %d", b)
	}
}

// Percentiles of known durations, 1 to 1000 ms, fall in the buckets of
// the durations at those ranks.
func TestStatsQuantiles(t *testing.T) {
	h := redisstore.StatsHistogram{}
	for ms := int64(1); ms <= 1000; ms++ {
		h[redisstore.StatsBucket(ms)]++
	}
	for _, c := range []struct {
		q  float64
		ms int64
	}{{0.5, 500}, {0.95, 950}, {0.99, 990}, {1, 1000}} {
		got := h.Quantile(c.q)
		lo, hi := redisstore.StatsBucketBounds(redisstore.StatsBucket(c.ms))
		if ms := float64(got) / float64(time.Millisecond); ms < lo || ms > hi {
			t.Errorf("p%v = %v, want within the bucket of %d ms, [%v, %v)", c.q*100, got, c.ms, lo, hi)
		}
	}
	if got := (redisstore.StatsHistogram{}).Quantile(0.5); got != 0 {
		t.Errorf("p50 of nothing = %v", got)
	}
}
