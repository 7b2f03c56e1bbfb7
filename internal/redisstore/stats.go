package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Run statistics: the per-minute counters workers and clients count in
// memory and add to the home partition's hashes now and then
// (AddRunStats; keyStatsMinute, keyStatsCoarse in layout.go), read back
// and summed over the partitions (ReadStats). The scripts on a run's path
// (enqueue.lua, start.lua, finish.lua) write none of them.

func newTaskStats() *engine.TaskStats {
	return &engine.TaskStats{Wait: engine.StatsHistogram{}, Succeeded: engine.StatsHistogram{}, Failed: engine.StatsHistogram{}, Retried: engine.StatsHistogram{}}
}

// ReadStats reads the run statistics of the n spans of length step (StatsMinute or
// StatsCoarse) that end with the one holding now, oldest first, in one
// pipeline of an HGETALL per span and partition.
func (s *Store) ReadStats(ctx context.Context, now time.Time, step time.Duration, n int) ([]engine.StatsSlot, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	coarse := step >= engine.StatsCoarse
	stepMs := int64(statsMinuteMs)
	if coarse {
		stepMs = statsCoarseMs
	}
	last := now.UnixMilli() / stepMs
	slots := make([]engine.StatsSlot, n)
	cmds := make([][]*redis.MapStringStringCmd, n)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			id := last - int64(n-1-i)
			slots[i] = engine.StatsSlot{Start: time.UnixMilli(id * stepMs), Tasks: map[string]*engine.TaskStats{}}
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
func addStatsField(tasks map[string]*engine.TaskStats, field, value string) {
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

// IsRunStats reports whether key is one of the partition's run statistics
// hashes (statsMinute, statsCoarse): counters of the namespace rather than
// of any run, which outlive the runs they count and expire on their own
// schedule.
func (k Keys) IsRunStats(key string) bool {
	return strings.HasPrefix(key, k.prefix+keyStatsMinute) || strings.HasPrefix(key, k.prefix+keyStatsCoarse)
}

// AddRunStats adds batch to the run statistics of the home partition
// (ReadStats sums all the partitions, so one is enough, and the home
// partition needs no read of the partition count), in one pipeline: an
// HINCRBY per counter to its minute hash and its ten-minute hash, and a
// PEXPIREAT on both hashes of each minute in batch.Expire. Each command
// touches one key, so the pipeline suits a cluster.
func (s *Store) AddRunStats(ctx context.Context, batch engine.RunStatsBatch) error {
	if len(batch.Counts) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for c, n := range batch.Counts {
			if n == 0 {
				continue
			}
			f := statsField(c)
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

// statsField is c's field in a statistics hash.
func statsField(c engine.StatsCounter) string {
	if c.Kind == engine.StatsKindDuplicate {
		return c.Task + statsSep + statsDuplicate
	}
	return c.Task + statsSep + string(c.Kind) + statsSep + strconv.Itoa(c.Bucket)
}
