package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// QueueWaits counts, per task, the runs held out of their streams: the
// members of each partition's retry zset, by why they wait (a rate limit's
// reason in the record, failed attempts, or else a scheduled time), and of
// its parked zset. It reads at most QueueCountMax members of each zset in
// a partition, and their records' task, fails and waiting fields, in two
// pipelined round trips; past that bound the counts are lower bounds and
// truncated is set.
func (s *Store) QueueWaits(ctx context.Context) (waits map[string]engine.QueueWait, truncated bool, err error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, false, err
	}
	type zs struct {
		keys   Keys
		parked bool
		cmd    *redis.StringSliceCmd
	}
	var sets []*zs
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range parts.Count() {
			ks := parts.Keys(i)
			sets = append(sets, &zs{keys: ks, cmd: p.ZRange(ctx, ks.Retry(), 0, QueueCountMax-1)},
				&zs{keys: ks, parked: true, cmd: p.ZRange(ctx, ks.Parked(), 0, QueueCountMax-1)})
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	type member struct {
		parked bool
		cmd    *redis.SliceCmd
	}
	var ms []member
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, z := range sets {
			ids := z.cmd.Val()
			if len(ids) == QueueCountMax {
				truncated = true
			}
			for _, id := range ids {
				ms = append(ms, member{z.parked, p.HMGet(ctx, z.keys.Run(id), runTask, runFails, runWaiting)})
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, false, err
	}
	waits = map[string]engine.QueueWait{}
	for _, m := range ms {
		v := m.cmd.Val()
		if len(v) != 3 {
			continue
		}
		task, _ := v[0].(string)
		if task == "" {
			continue // the record is gone
		}
		fails, _ := v[1].(string)
		waiting, _ := v[2].(string)
		w := waits[task]
		switch {
		case m.parked:
			w.Concurrency++
		case waiting != "":
			w.RateLimited++
		case fails != "" && fails != "0":
			w.Retrying++
		default:
			w.Scheduled++
		}
		waits[task] = w
	}
	return waits, truncated, nil
}
