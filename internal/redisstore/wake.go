package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// wakeScript wakes runs waiting for an event or a signal: lua/wake.lua.
var wakeScript = loadScript("wake")

// eventWaitersTTL bounds how long a run's registration for an event lasts
// when no event of its key comes and the run ends otherwise (a timeout, a
// cancel): each registration sets it again.
const eventWaitersTTL = 30 * 24 * time.Hour

// AddEventWaiter registers runID as waiting for the next event of
// eventKey, as of now: the push of an event of the key wakes it
// (EventWaiters, WakeRuns, ForgetEventWaiters), and failing that a
// recoverer does (RecoverEventWaiters). The registration's value is its
// time and a nonce, so that forgetting an old one never removes a newer.
func (s *Store) AddEventWaiter(ctx context.Context, eventKey, runID string, now time.Time) error {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	ks := parts.Keys(0)
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	reg := strconv.FormatInt(unixMS(now), 10) + ":" + hex.EncodeToString(nonce[:])
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, ks.EventWaiters(eventKey), runID, reg)
		p.PExpire(ctx, ks.EventWaiters(eventKey), eventWaitersTTL)
		p.ZAddNX(ctx, ks.EventWaits(), redis.Z{Score: float64(unixMS(now)), Member: eventKey})
		return nil
	})
	return err
}

// EventWaiters reads the registrations for an event of any of eventKeys,
// in one round trip.
func (s *Store) EventWaiters(ctx context.Context, eventKeys []string) ([]engine.EventWaiter, error) {
	if len(eventKeys) == 0 {
		return nil, nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	ks := parts.Keys(0)
	cmds := make([]*redis.MapStringStringCmd, len(eventKeys))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range eventKeys {
			cmds[i] = p.HGetAll(ctx, ks.EventWaiters(key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []engine.EventWaiter
	for i, c := range cmds {
		out = appendWaiters(out, eventKeys[i], c.Val())
	}
	return out, nil
}

// appendWaiters appends the registrations of one event key, read as
// field (run ID) and value, in run ID order.
func appendWaiters(out []engine.EventWaiter, eventKey string, regs map[string]string) []engine.EventWaiter {
	for _, id := range slices.Sorted(maps.Keys(regs)) {
		ms, _, _ := strings.Cut(regs[id], ":")
		n, _ := strconv.ParseInt(ms, 10, 64)
		out = append(out, engine.EventWaiter{EventKey: eventKey, RunID: id, Since: fromMS(n), Registration: regs[id]})
	}
	return out
}

// RecoverEventWaiters looks at up to limit event keys with waiters, those
// looked at longest ago (and not within grace) first, and wakes the runs registered before an
// event of their key that is older than grace: the process that pushed it
// died before it woke them. An event stamped up to EventClockSkew before a
// registration counts, as the run's own look does. It then forgets those
// registrations, and keys left without any; each key looked at is marked
// with now.
func (s *Store) RecoverEventWaiters(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, woken int, err error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return 0, 0, err
	}
	home := parts.Keys(0)
	// A key looked at within grace (by any worker) waits its turn: every
	// key is looked at about once per grace, however many workers look.
	cutoff := strconv.FormatInt(unixMS(now.Add(-grace)), 10)
	keys, err := s.rdb.ZRangeByScore(ctx, home.EventWaits(), &redis.ZRangeBy{Min: "-inf", Max: cutoff, Count: int64(limit)}).Result()
	if err != nil || len(keys) == 0 {
		return 0, 0, err
	}
	regs := make([]*redis.MapStringStringCmd, len(keys))
	newest := make([][]*redis.ZSliceCmd, len(keys))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range keys {
			regs[i] = p.HGetAll(ctx, home.EventWaiters(key))
			for part := range parts.Count() {
				newest[i] = append(newest[i], p.ZRevRangeByScoreWithScores(ctx, parts.Keys(part).EventKeyIndex(key),
					&redis.ZRangeBy{Max: cutoff, Min: "-inf", Count: 1}))
			}
		}
		return nil
	})
	if err != nil {
		return len(keys), 0, err
	}
	var stale, empty []engine.EventWaiter
	for i, key := range keys {
		var last time.Time
		for _, c := range newest[i] {
			if z := c.Val(); len(z) > 0 && fromMS(int64(z[0].Score)).After(last) {
				last = fromMS(int64(z[0].Score))
			}
		}
		ws := appendWaiters(nil, key, regs[i].Val())
		if len(ws) == 0 {
			empty = append(empty, engine.EventWaiter{EventKey: key})
		}
		for _, w := range ws {
			if !last.Before(w.Since.Add(-engine.EventClockSkew)) {
				stale = append(stale, w)
			}
		}
	}
	if len(stale) > 0 {
		ids := make([]string, len(stale))
		for i, w := range stale {
			ids[i] = w.RunID
		}
		if err := s.WakeRuns(ctx, ids); err != nil {
			return len(keys), 0, err
		}
	}
	if err := s.ForgetEventWaiters(ctx, append(stale, empty...)); err != nil {
		return len(keys), len(stale), err
	}
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, key := range keys {
			p.ZAddXX(ctx, home.EventWaits(), redis.Z{Score: float64(unixMS(now)), Member: key})
		}
		return nil
	})
	return len(keys), len(stale), err
}

// WakeRuns wakes the runs whose handlers wait for an event or a signal:
// one call of the wake script per partition. Missing, ended and sleeping
// runs are left alone.
func (s *Store) WakeRuns(ctx context.Context, runIDs []string) error {
	_, errs := runBatch(ctx, s, batchOp[string, struct{}]{
		script: wakeScript,
		part:   func(parts *Partitions, id string) (int, error) { return runPartition(parts, id) },
		call: func(ks Keys, ids []string) ([]string, []any) {
			k := [1 + wakeKeyCount]string{wakeKeyRetry: ks.Retry()}
			h := [1 + wakeArgCount]any{wakeArgPrefix: ks.Prefix()}
			return itemsCall(k[1:], h[1:], ids, func(id string, keys []string, args []any) ([]string, []any) {
				a := [wakeItemArgCount]any{wakeItemArgRunID: id}
				return keys, append(args, a[:]...)
			})
		},
		reply: func(_ string, r []any) (struct{}, int, error) {
			if len(r) < 1 {
				return struct{}{}, len(r), fmt.Errorf("redisstore: wake: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return struct{}{}, 1, scriptError(err)
			}
			return struct{}{}, 1, nil
		},
	}, runIDs)
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
