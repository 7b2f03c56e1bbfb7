package engine

import (
	"math"
	"slices"
	"time"
)

// Spans of the statistics' hashes, and how long each is kept.
const (
	// StatsMinute is the span of a minute hash, kept StatsMinuteKeep.
	StatsMinute = time.Minute
	// StatsCoarse is the span of a coarse hash, kept StatsCoarseKeep.
	StatsCoarse = 10 * time.Minute
	// StatsMinuteKeep is how long a minute hash is kept after its minute.
	StatsMinuteKeep = 2 * time.Hour
	// StatsCoarseKeep is how long a coarse hash is kept after its span.
	StatsCoarseKeep = 26 * time.Hour
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

// Add adds o's counts to t.
func (t *TaskStats) Add(o *TaskStats) {
	t.Duplicates += o.Duplicates
	t.Wait.Add(o.Wait)
	t.Succeeded.Add(o.Succeeded)
	t.Failed.Add(o.Failed)
	t.Retried.Add(o.Retried)
}

// StatsKind is what a run statistics counter counts.
type StatsKind string

// The kinds of counter.
const (
	// StatsKindWait counts attempts begun by how long they waited in
	// their stream.
	StatsKindWait StatsKind = "W"
	// StatsKindSucceeded counts attempts that succeeded by how long they
	// ran.
	StatsKindSucceeded StatsKind = "S"
	// StatsKindFailed counts attempts that failed as their run's last by
	// how long they ran.
	StatsKindFailed StatsKind = "F"
	// StatsKindRetried counts attempts that failed to be retried by how
	// long they ran.
	StatsKindRetried StatsKind = "R"
	// StatsKindDuplicate counts triggers that created no run because
	// their key was held; it has no bucket.
	StatsKindDuplicate StatsKind = "D"
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
func StatsMinuteOf(t time.Time) int64 { return t.UnixMilli() / StatsMinute.Milliseconds() }

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

// StatsSlot is the counts of one span (a minute, or StatsCoarse), summed
// over the partitions, by task.
type StatsSlot struct {
	// Start is when the span begins.
	Start time.Time
	// Tasks holds the counts of each task with any.
	Tasks map[string]*TaskStats
}
