package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Run statistics: the per-minute counters workers and clients count in
// memory and add to the home partition's hashes now and then
// (AddRunStats; keyStatsMinute, keyStatsCoarse in layout.go), read back
// and summed over the partitions (ReadStats). The scripts on a run's path
// (enqueue.lua, start.lua, finish.lua) write none of them.

// Spans of the statistics' hashes, and how long each is kept.
const (
	// StatsMinute is the span of a minute hash, kept StatsMinuteKeep.
	StatsMinute = statsMinuteMs * time.Millisecond
	// StatsCoarse is the span of a coarse hash, kept StatsCoarseKeep.
	StatsCoarse = statsCoarseMs * time.Millisecond
	// StatsMinuteKeep is how long a minute hash is kept after its minute.
	StatsMinuteKeep = statsMinuteKeepMs * time.Millisecond
	// StatsCoarseKeep is how long a coarse hash is kept after its span.
	StatsCoarseKeep = statsCoarseKeepMs * time.Millisecond
)

// StatsHistogram counts durations by their log-scale bucket (StatsBucket).
type StatsHistogram map[int]int64

// Count is how many durations the histogram holds.
func (h StatsHistogram) Count() int64 {
	var n int64
	for _, c := range h {
		n += c
	}
	return n
}

// Add adds o's counts to h.
func (h StatsHistogram) Add(o StatsHistogram) {
	for b, c := range o {
		h[b] += c
	}
}

// Quantile is the duration below which the fraction q of the histogram's
// durations lie, interpolated within its bucket; 0 for an empty histogram.
func (h StatsHistogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	bs := make([]int, 0, len(h))
	for b := range h {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	rank := math.Max(1, math.Ceil(q*float64(n)))
	var cum int64
	for _, b := range bs {
		c := h[b]
		if float64(cum+c) >= rank {
			lo, hi := StatsBucketBounds(b)
			ms := lo + (hi-lo)*(rank-float64(cum))/float64(c)
			return time.Duration(ms * float64(time.Millisecond))
		}
		cum += c
	}
	_, hi := StatsBucketBounds(bs[len(bs)-1])
	return time.Duration(hi * float64(time.Millisecond))
}

// StatsBucket is the log-scale bucket of a duration of ms milliseconds:
// four buckets per power of two, from the mantissa and exponent of frexp;
// 0 below 1 ms, statsMaxBucket from 1e15 ms.
func StatsBucket(ms int64) int {
	if ms < 1 {
		return 0
	}
	if ms >= 1e15 {
		return statsMaxBucket
	}
	m, e := math.Frexp(float64(ms))
	return e*4 + int(math.Floor((m-0.5)*8))
}

// statsMaxBucket is the bucket of 1e15 ms and more (some 35,000 years):
// the largest a field holds.
const statsMaxBucket = 254

// StatsBucketBounds are the milliseconds bucket b covers, [lo, hi).
func StatsBucketBounds(b int) (lo, hi float64) {
	if b < 4 {
		return 0, 1
	}
	e, j := b/4, float64(b%4)
	p := math.Ldexp(1, e)
	return (0.5 + j/8) * p, (0.5 + (j+1)/8) * p
}

// TaskStats are one task's counts over a span.
type TaskStats struct {
	// Duplicates counts triggers that created no run because their key
	// was held.
	Duplicates int64
	// Wait holds the queue waits of attempts begun.
	Wait StatsHistogram
	// Succeeded, Failed and Retried hold how long attempts ran, by how
	// they ended: succeeded, failed as their run's last, or failed to be
	// retried.
	Succeeded, Failed, Retried StatsHistogram
}

func newTaskStats() *TaskStats {
	return &TaskStats{Wait: StatsHistogram{}, Succeeded: StatsHistogram{}, Failed: StatsHistogram{}, Retried: StatsHistogram{}}
}

// Add adds o's counts to t.
func (t *TaskStats) Add(o *TaskStats) {
	t.Duplicates += o.Duplicates
	t.Wait.Add(o.Wait)
	t.Succeeded.Add(o.Succeeded)
	t.Failed.Add(o.Failed)
	t.Retried.Add(o.Retried)
}

// StatsSlot is the counts of one span (a minute, or StatsCoarse), summed
// over the partitions, by task.
type StatsSlot struct {
	// Start is when the span begins.
	Start time.Time
	// Tasks holds the counts of each task with any.
	Tasks map[string]*TaskStats
}

// ReadStats reads the run statistics of the n spans of length step (StatsMinute or
// StatsCoarse) that end with the one holding now, oldest first, in one
// pipeline of an HGETALL per span and partition.
func (s *Store) ReadStats(ctx context.Context, now time.Time, step time.Duration, n int) ([]StatsSlot, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	coarse := step >= StatsCoarse
	stepMs := int64(statsMinuteMs)
	if coarse {
		stepMs = statsCoarseMs
	}
	last := now.UnixMilli() / stepMs
	slots := make([]StatsSlot, n)
	cmds := make([][]*redis.MapStringStringCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			id := last - int64(n-1-i)
			slots[i] = StatsSlot{Start: time.UnixMilli(id * stepMs), Tasks: map[string]*TaskStats{}}
			cmds[i] = make([]*redis.MapStringStringCmd, parts.Count())
			for j := range parts.Count() {
				ks := parts.Keys(j)
				key := ks.statsMinute(id)
				if coarse {
					key = ks.statsCoarse(id)
				}
				cmds[i][j] = p.HGetAll(ctx, key)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i := range slots {
		for _, c := range cmds[i] {
			m, err := c.Result()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
			for f, v := range m {
				addStatsField(slots[i].Tasks, f, v)
			}
		}
	}
	return slots, nil
}

// addStatsField adds one field of a statistics hash to tasks: "<task>|D"
// or "<task>|<kind>|<bucket>" (see StatsCounter.field). The task name may
// hold the separator: the other parts are the field's last. A field that
// does not parse is left out.
func addStatsField(tasks map[string]*TaskStats, field, value string) {
	n, err := strconv.ParseInt(value, 10, 64)
	if err != nil {
		return
	}
	rest, last, ok := cutLast(field, statsSep)
	if !ok {
		return
	}
	task, kind, bucket := rest, last, -1
	if last != statsDuplicate {
		if bucket, err = strconv.Atoi(last); err != nil {
			return
		}
		if task, kind, ok = cutLast(rest, statsSep); !ok {
			return
		}
	}
	t := tasks[task]
	if t == nil {
		t = newTaskStats()
		tasks[task] = t
	}
	switch kind {
	case statsDuplicate:
		t.Duplicates += n
	case statsWait:
		t.Wait[bucket] += n
	case statsSucceeded:
		t.Succeeded[bucket] += n
	case statsFailed:
		t.Failed[bucket] += n
	case statsRetried:
		t.Retried[bucket] += n
	}
}

func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// statsMinute is the partition's statistics hash of unix minute m.
func (k Keys) statsMinute(m int64) string {
	return k.prefix + keyStatsMinute + strconv.FormatInt(m, 10)
}

// statsCoarse is the partition's statistics hash of coarse span c (unix
// ms / statsCoarseMs).
func (k Keys) statsCoarse(c int64) string {
	return k.prefix + keyStatsCoarse + strconv.FormatInt(c, 10)
}

// StatsKind is what a run statistics counter counts.
type StatsKind string

// The kinds of counter.
const (
	// StatsKindWait counts attempts begun by how long they waited in
	// their stream.
	StatsKindWait StatsKind = statsWait
	// StatsKindSucceeded counts attempts that succeeded by how long they
	// ran.
	StatsKindSucceeded StatsKind = statsSucceeded
	// StatsKindFailed counts attempts that failed as their run's last by
	// how long they ran.
	StatsKindFailed StatsKind = statsFailed
	// StatsKindRetried counts attempts that failed to be retried by how
	// long they ran.
	StatsKindRetried StatsKind = statsRetried
	// StatsKindDuplicate counts triggers that created no run because
	// their key was held; it has no bucket.
	StatsKindDuplicate StatsKind = statsDuplicate
)

// StatsCounter names one counter of the run statistics: a task's kind
// in a minute, with the duration's bucket (StatsBucket; ignored for
// StatsKindDuplicate).
type StatsCounter struct {
	// Minute is the unix minute counted in (unix ms / StatsMinute).
	Minute int64
	// Task is the task's name.
	Task string
	// Kind is what is counted.
	Kind StatsKind
	// Bucket is the duration's bucket.
	Bucket int
}

// StatsMinuteOf is the unix minute of t, as StatsCounter.Minute holds it.
func StatsMinuteOf(t time.Time) int64 { return t.UnixMilli() / statsMinuteMs }

// RunStatsBatch is what AddRunStats adds.
type RunStatsBatch struct {
	// Counts are the amounts to add to each counter.
	Counts map[StatsCounter]int64
	// Expire holds the minutes whose hashes, the minute's and the ten
	// minutes' holding it, get their expiry with this batch: those the
	// writer has not written before (an expiry is set once per minute,
	// not with every batch).
	Expire map[int64]bool
}

// field is c's field in a statistics hash.
func (c StatsCounter) field() string {
	if c.Kind == StatsKindDuplicate {
		return c.Task + statsSep + statsDuplicate
	}
	return c.Task + statsSep + string(c.Kind) + statsSep + strconv.Itoa(c.Bucket)
}

// AddRunStats adds batch to the run statistics of the home partition
// (ReadStats sums all the partitions, so one is enough, and the home
// partition needs no read of the partition count), in one pipeline: an
// HINCRBY per counter to its minute hash and its ten-minute hash, and a
// PEXPIREAT on both hashes of each minute in batch.Expire. Each command
// touches one key, so the pipeline suits a cluster.
func (s *Store) AddRunStats(ctx context.Context, batch RunStatsBatch) error {
	if len(batch.Counts) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for c, n := range batch.Counts {
			if n == 0 {
				continue
			}
			f := c.field()
			p.HIncrBy(ctx, s.keys.statsMinute(c.Minute), f, n)
			p.HIncrBy(ctx, s.keys.statsCoarse(c.Minute*statsMinuteMs/statsCoarseMs), f, n)
		}
		for m := range batch.Expire {
			c := m * statsMinuteMs / statsCoarseMs
			p.PExpireAt(ctx, s.keys.statsMinute(m), time.UnixMilli((m+1)*statsMinuteMs+statsMinuteKeepMs))
			p.PExpireAt(ctx, s.keys.statsCoarse(c), time.UnixMilli((c+1)*statsCoarseMs+statsCoarseKeepMs))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: add run statistics: %w", err)
	}
	return nil
}
