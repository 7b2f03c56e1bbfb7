package redisstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// IndexEntry is one entry of a time index (the runs index, the events
// index, an event key's index): a record's ID and its score, the unix ms it
// was created.
type IndexEntry struct {
	ID    string
	Score int64
}

// PageIndex returns up to limit entries of index, newest first, that come
// after the entry after (nil: from the newest). Entries of one score come
// by ID, descending. The position is the entry itself, not an offset, so
// a page is stable while newer entries are added and older ones swept.
func (s *Store) PageIndex(ctx context.Context, index string, after *IndexEntry, limit int) ([]IndexEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	if after == nil {
		zs, err := s.rdb.ZRevRangeWithScores(ctx, index, 0, int64(limit-1)).Result()
		return entries(zs, nil), err
	}
	score := strconv.FormatInt(after.Score, 10)
	// The entries of after's own score (those of one millisecond) that sort
	// below it, then the older scores.
	same, err := s.rdb.ZRevRangeByScoreWithScores(ctx, index, &redis.ZRangeBy{Min: score, Max: score}).Result()
	if err != nil {
		return nil, err
	}
	out := entries(same, func(id string) bool { return id < after.ID })
	if len(out) >= limit {
		return out[:limit], nil
	}
	older, err := s.rdb.ZRevRangeByScoreWithScores(ctx, index, &redis.ZRangeBy{
		Min: "-inf", Max: "(" + score, Count: int64(limit - len(out)),
	}).Result()
	return append(out, entries(older, nil)...), err
}

func entries(zs []redis.Z, keep func(string) bool) []IndexEntry {
	out := make([]IndexEntry, 0, len(zs))
	for _, z := range zs {
		id, _ := z.Member.(string)
		if keep == nil || keep(id) {
			out = append(out, IndexEntry{ID: id, Score: int64(z.Score)})
		}
	}
	return out
}

// GetRuns reads many run records in one round trip, with, for each, when
// a queued run waiting for a retry or a debounce window falls due (zero
// when it waits for nothing). A record that does not exist (any more) is
// nil.
func (s *Store) GetRuns(ctx context.Context, ids []string) ([]*Run, []time.Time, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	recs := make([]*redis.MapStringStringCmd, len(ids))
	dues := make([]*redis.FloatCmd, len(ids))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			recs[i] = p.HGetAll(ctx, s.keys.Run(id))
			dues[i] = p.ZScore(ctx, s.keys.Retry(), id)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	runs := make([]*Run, len(ids))
	due := make([]time.Time, len(ids))
	for i, id := range ids {
		if err := recs[i].Err(); err != nil {
			return nil, nil, err
		}
		if h := recs[i].Val(); len(h) > 0 {
			runs[i] = parseRun(id, h)
		}
		if v, err := dues[i].Result(); err == nil {
			due[i] = fromMS(int64(v))
		}
	}
	return runs, due, nil
}

// GetKeys reads who holds each of keys, and for how long, in one round
// trip; held[i] is false for a key nobody holds.
func (s *Store) GetKeys(ctx context.Context, keys []string) (states []KeyState, held []bool, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			rk := s.keys.IdempotencyKey(k)
			gets[i], ttls[i] = p.Get(ctx, rk), p.PTTL(ctx, rk)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	states, held = make([]KeyState, len(keys)), make([]bool, len(keys))
	for i, k := range keys {
		states[i].Key = k
		owner, err := gets[i].Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		states[i].Owner, held[i] = owner, true
		if d, err := ttls[i].Result(); err == nil && d > 0 {
			states[i].TTL = d
		}
	}
	return states, held, nil
}
