package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// wakeScript wakes runs waiting for an event or a signal: lua/wake.lua.
var wakeScript = loadScript("wake")

// eventWaitersTTL bounds how long a run's registration for an event lasts
// when no event of its key comes and the run ends otherwise (a timeout, a
// cancel): each registration sets it again.
const eventWaitersTTL = 30 * 24 * time.Hour

// AddEventWaiter registers runID as waiting for the next event of
// eventKey: the next push of the key takes it (TakeEventWaiters) and wakes
// it.
func (s *Store) AddEventWaiter(ctx context.Context, eventKey, runID string, now time.Time) error {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	k := parts.Keys(0).EventWaiters(eventKey)
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, runID, strconv.FormatInt(unixMS(now), 10))
		p.PExpire(ctx, k, eventWaitersTTL)
		return nil
	})
	return err
}

// TakeEventWaiters returns, and forgets, the runs registered as waiting
// for an event of any of eventKeys, in one round trip.
func (s *Store) TakeEventWaiters(ctx context.Context, eventKeys []string) ([]string, error) {
	if len(eventKeys) == 0 {
		return nil, nil
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	ks := parts.Keys(0)
	cmds := make([]*redis.StringSliceCmd, len(eventKeys))
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, key := range eventKeys {
			cmds[i] = p.HKeys(ctx, ks.EventWaiters(key))
			p.Del(ctx, ks.EventWaiters(key))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range cmds {
		for _, id := range c.Val() {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// WakeRuns wakes the runs whose handlers wait for an event or a signal:
// one call of the wake script per partition. Missing, ended and sleeping
// runs are left alone.
func (s *Store) WakeRuns(ctx context.Context, runIDs []string) error {
	_, errs := runBatch(ctx, s, batchOp[string, struct{}]{
		script: wakeScript,
		part:   func(parts *Partitions, id string) (int, error) { return runPartition(parts, id) },
		call: func(ks Keys, ids []string) ([]string, []any) {
			h := [1 + wakeArgCount]any{wakeArgPrefix: ks.Prefix()}
			args := append(make([]any, 0, wakeArgCount+wakeItemArgCount*len(ids)), h[1:]...)
			for _, id := range ids {
				a := [wakeItemArgCount]any{wakeItemArgRunID: id}
				args = append(args, a[:]...)
			}
			k := [1 + wakeKeyCount]string{wakeKeyRetry: ks.Retry()}
			return k[1:], args
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
