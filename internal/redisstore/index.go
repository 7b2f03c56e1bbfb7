package redisstore

import (
	"context"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// PageRuns returns up to limit entries of the runs indexes of every
// partition, merged newest first, that come after the entry after (nil:
// from the newest). Entries of one score come by ID, descending; IDs are
// unique across partitions, so the order is total. The position is the
// entry itself, not an offset, so a page is stable while newer entries are
// added and older ones swept, and the next page of every partition starts
// from the same position.
func (s *Store) PageRuns(ctx context.Context, after *engine.IndexEntry, limit int) ([]engine.IndexEntry, error) {
	indexes, err := s.indexes(ctx, Keys.Runs)
	if err != nil {
		return nil, err
	}
	return s.pageIndexes(ctx, indexes, after, limit)
}

// PageEvents is PageRuns for the events indexes or, with eventKey set,
// the indexes of that event key's events.
func (s *Store) PageEvents(ctx context.Context, eventKey string, after *engine.IndexEntry, limit int) ([]engine.IndexEntry, error) {
	indexes, err := s.indexes(ctx, eventIndex(eventKey))
	if err != nil {
		return nil, err
	}
	return s.pageIndexes(ctx, indexes, after, limit)
}

// IndexedRuns returns how many entries the runs indexes of every partition
// hold, with one ZCARD per partition in one pipeline. It counts the runs
// PageRuns lists, and those whose records expired after their retention
// until the sweep removes their entries.
func (s *Store) IndexedRuns(ctx context.Context) (int64, error) {
	indexes, err := s.indexes(ctx, Keys.Runs)
	if err != nil {
		return 0, err
	}
	return s.cardIndexes(ctx, indexes)
}

// IndexedEvents is IndexedRuns for the events indexes or, with eventKey set,
// the indexes of that event key's events: what PageEvents lists.
func (s *Store) IndexedEvents(ctx context.Context, eventKey string) (int64, error) {
	indexes, err := s.indexes(ctx, eventIndex(eventKey))
	if err != nil {
		return 0, err
	}
	return s.cardIndexes(ctx, indexes)
}

// indexes returns the key index gives of every partition.
func (s *Store) indexes(ctx context.Context, index func(Keys) string) ([]string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, parts.Count())
	for i := range out {
		out[i] = index(parts.keys[i])
	}
	return out, nil
}

// eventIndex is the events index of a partition, or with eventKey set the
// index of that event key's events.
func eventIndex(eventKey string) func(Keys) string {
	if eventKey == "" {
		return Keys.Events
	}
	return func(k Keys) string { return k.EventKeyIndex(eventKey) }
}

// cardIndexes sums the ZCARD of each index, in one pipeline (one command
// per index, so each touches one slot).
func (s *Store) cardIndexes(ctx context.Context, indexes []string) (int64, error) {
	cmds := make([]*redis.IntCmd, len(indexes))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, index := range indexes {
			cmds[i] = p.ZCard(ctx, index)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var n int64
	for _, c := range cmds {
		n += c.Val()
	}
	return n, nil
}

// pageIndexes reads the page after after of each index, in one pipeline,
// and merges them.
func (s *Store) pageIndexes(ctx context.Context, indexes []string, after *engine.IndexEntry, limit int) ([]engine.IndexEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	same := make([]*redis.ZSliceCmd, len(indexes))
	older := make([]*redis.ZSliceCmd, len(indexes))
	score := ""
	if after != nil {
		score = strconv.FormatInt(after.Score, 10)
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, index := range indexes {
			if after == nil {
				older[i] = p.ZRevRangeWithScores(ctx, index, 0, int64(limit-1))
				continue
			}
			// The entries of after's own score (those of one millisecond)
			// that sort below it, then the older scores.
			same[i] = p.ZRevRangeByScoreWithScores(ctx, index, &redis.ZRangeBy{Min: score, Max: score})
			older[i] = p.ZRevRangeByScoreWithScores(ctx, index, &redis.ZRangeBy{Min: "-inf", Max: "(" + score, Count: int64(limit)})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []engine.IndexEntry
	for i := range indexes {
		if same[i] != nil {
			out = append(out, entries(same[i].Val(), func(id string) bool { return id < after.ID })...)
		}
		out = append(out, entries(older[i].Val(), nil)...)
	}
	if len(indexes) > 1 {
		engine.SortNewestFirst(out) // the order of ZREVRANGE within one index
	}
	return out[:min(limit, len(out))], nil
}

// rangeIndexes returns entries offset..offset+limit-1, newest first, of
// the indexes merged (one ZREVRANGE for a single index).
func (s *Store) rangeIndexes(ctx context.Context, indexes []string, offset, limit int64) ([]string, error) {
	if limit <= 0 {
		return nil, nil
	}
	if len(indexes) == 1 {
		return s.rdb.ZRevRange(ctx, indexes[0], offset, offset+limit-1).Result()
	}
	cmds := make([]*redis.ZSliceCmd, len(indexes))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, index := range indexes {
			cmds[i] = p.ZRevRangeWithScores(ctx, index, 0, offset+limit-1)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var all []engine.IndexEntry
	for _, c := range cmds {
		all = append(all, entries(c.Val(), nil)...)
	}
	engine.SortNewestFirst(all)
	if offset >= int64(len(all)) {
		return []string{}, nil
	}
	page := all[offset:min(offset+limit, int64(len(all)))]
	ids := make([]string, len(page))
	for i, e := range page {
		ids[i] = e.ID
	}
	return ids, nil
}

func entries(zs []redis.Z, keep func(string) bool) []engine.IndexEntry {
	out := make([]engine.IndexEntry, 0, len(zs))
	for _, z := range zs {
		id, _ := z.Member.(string)
		if keep == nil || keep(id) {
			out = append(out, engine.IndexEntry{ID: id, Score: int64(z.Score)})
		}
	}
	return out
}

// GetRuns reads many run records in one round trip, with, for each, when
// a queued run waiting for a retry or a debounce window falls due (zero
// when it waits for nothing). A record that does not exist (any more) is
// nil.
func (s *Store) GetRuns(ctx context.Context, ids []string) ([]*engine.Run, []time.Time, error) {
	if len(ids) == 0 {
		return nil, nil, nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, nil, err
	}
	recs := make([]*redis.MapStringStringCmd, len(ids))
	dues := make([]*redis.FloatCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			if ks, err := parts.runKeys(id); err == nil {
				recs[i] = p.HGetAll(ctx, ks.Run(id))
				dues[i] = p.ZScore(ctx, ks.Retry(), id)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	runs := make([]*engine.Run, len(ids))
	due := make([]time.Time, len(ids))
	for i, id := range ids {
		if recs[i] == nil {
			continue // a run that cannot exist
		}
		if err := recs[i].Err(); err != nil {
			return nil, nil, err
		}
		if h := recs[i].Val(); len(h) > 0 {
			runs[i] = parseRun(id, h)
		}
		// A wait without a timeout has no due time (+inf).
		if v, err := dues[i].Result(); err == nil && !math.IsInf(v, 1) {
			due[i] = fromMS(int64(v))
		}
	}
	return runs, due, nil
}

// GetKeys reads who holds each of keys, and for how long, in one round
// trip; held[i] is false for a key nobody holds.
func (s *Store) GetKeys(ctx context.Context, keys []string) (states []engine.KeyState, held []bool, err error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, nil, err
	}
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			rk := parts.keys[parts.OfKey(k)].IdempotencyKey(k)
			gets[i], ttls[i] = p.Get(ctx, rk), p.PTTL(ctx, rk)
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	states, held = make([]engine.KeyState, len(keys)), make([]bool, len(keys))
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
