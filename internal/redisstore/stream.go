package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// settingsSpec is the spec of a run's settings as a trigger sends it, for
// its record and its first delivery: the first specSettings values of a
// spec (see layout.go), durations in ms and created in unix ms.
func settingsSpec(strat engine.Strategy, hold int64, retries int, timeout, created int64, maxDeliveries int,
	retain, retention int64) string {
	strat = cmp.Or(strat, engine.StrategyNone)
	var v [specSettings]int64
	v[specHold], v[specRetries], v[specTimeout], v[specCreated] = hold, int64(retries), timeout, created
	v[specMaxDeliveries], v[specRetain], v[specRetention] = int64(maxDeliveries), retain, retention
	b := make([]byte, 0, 64)
	for i := range specSettings {
		if i > 0 {
			b = append(b, ' ')
		}
		if i == specStrategy {
			b = append(b, strat...)
			continue
		}
		b = strconv.AppendInt(b, v[i], 10)
	}
	return string(b)
}

// parseSpecValues splits a spec: a run record's (specSettings values) or
// a stream entry's (those, or all specFieldCount when it was queued
// again; absent ones read as 0). ok is false when it is neither.
func parseSpecValues(o string) (strat engine.Strategy, n [specFieldCount]int64, ok bool) {
	for i := range specFieldCount {
		f, rest, more := strings.Cut(o, " ")
		if !more && i != specSettings-1 && i != specFieldCount-1 {
			return "", n, false // too few values
		}
		o = rest
		if i == specStrategy {
			strat = engine.Strategy(f)
		} else {
			x, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				return "", n, false
			}
			n[i] = x
		}
		if !more {
			return strat, n, true
		}
	}
	return "", n, false // too many values
}

// parseSpec reads a stream entry's fields; nil when it has no valid spec.
func parseSpec(v map[string]any) *engine.RunSpec {
	o, _ := v[entrySpec].(string)
	strat, n, ok := parseSpecValues(o)
	if !ok {
		return nil
	}
	in, _ := v[entryInput].(string)
	meta, _ := v[entryMeta].(string)
	meta = cmp.Or(meta, noMeta) // not written when there is none
	key, _ := v[entryIdempotencyKey].(string)
	// Input and metadata share one allocation; neither can grow into the other.
	b := append(append(make([]byte, 0, len(in)+len(meta)), in...), meta...)
	return &engine.RunSpec{
		Input: b[:len(in):len(in)], Meta: b[len(in):], Key: key, Strategy: strat,
		Hold:    time.Duration(n[specHold]) * time.Millisecond,
		Retries: int(n[specRetries]), Timeout: time.Duration(n[specTimeout]) * time.Millisecond,
		Created: fromMS(n[specCreated]), MaxDeliveries: int(n[specMaxDeliveries]),
		Retain: time.Duration(n[specRetain]) * time.Millisecond, Retention: time.Duration(n[specRetention]) * time.Millisecond,
		Fails: int(n[specFails]), Attempts: int(n[specAttempts]),
	}
}

// lane is a task stream: its task and priority.
type lane struct {
	task string
	prio int
}

func (s *Store) deliveries(streams []redis.XStream, laneOf map[string]lane) []engine.Delivery {
	var out []engine.Delivery
	for _, st := range streams {
		l := laneOf[st.Stream]
		out = slices.Grow(out, len(st.Messages)) // not doubling past a read's size
		for _, m := range st.Messages {
			id, _ := m.Values[entryRunID].(string)
			out = append(out, engine.Delivery{Task: l.task, Priority: l.prio, EntryID: m.ID, RunID: id, Spec: parseSpec(m.Values)})
		}
	}
	return out
}

// ReadGroup blocks up to block for new deliveries of any of tasks in
// partition part (one XREADGROUP over the partition's streams, every
// priority's, which share its slot), at most count per stream. It returns
// nil, nil when nothing arrived; the deliveries come the highest priority
// first.
func (s *Store) ReadGroup(ctx context.Context, part int, consumer string, tasks []string, count int, block time.Duration) ([]engine.Delivery, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return nil, err
	}
	n := len(tasks) * len(priorities)
	streams := make([]string, 0, 2*n)
	laneOf := make(map[string]lane, n)
	for _, p := range priorities {
		for _, t := range tasks {
			k := ks.Lane(t, p)
			streams = append(streams, k)
			laneOf[k] = lane{t, p}
		}
	}
	for range n {
		streams = append(streams, ">")
	}
	res, err := s.rdb.XReadGroup(ctx, &redis.XReadGroupArgs{
		Group: GroupName, Consumer: consumer, Streams: streams, Count: int64(count), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ds := s.deliveries(res, laneOf)
	slices.SortStableFunc(ds, func(a, b engine.Delivery) int { return b.Priority - a.Priority })
	return ds, nil
}

// AutoClaim takes over deliveries of task in partition part whose lease
// (idle time in the pending list) is longer than minIdle: their worker
// died or stalled. Each priority's stream is looked at, the highest first,
// until count are taken.
func (s *Store) AutoClaim(ctx context.Context, part int, task, consumer string, minIdle time.Duration, count int) ([]engine.Delivery, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return nil, err
	}
	var out []engine.Delivery
	for _, p := range priorities {
		if len(out) >= count {
			break
		}
		k := ks.Lane(task, p)
		msgs, _, err := s.rdb.XAutoClaim(ctx, &redis.XAutoClaimArgs{
			Stream: k, Group: GroupName, Consumer: consumer, MinIdle: minIdle, Start: "0-0", Count: int64(count - len(out)),
		}).Result()
		if err != nil {
			return nil, err
		}
		out = append(out, s.deliveries([]redis.XStream{{Stream: k, Messages: msgs}}, map[string]lane{k: {task, p}})...)
	}
	for i := range out {
		out[i].Redelivered = true
	}
	return out, nil
}

// --- idempotency keys ------------------------------------------------------

// GetKey returns who holds key, or ok=false when nobody does.
func (s *Store) GetKey(ctx context.Context, key string) (engine.KeyState, bool, error) {
	ks, err := s.keysOfKey(ctx, key)
	if err != nil {
		return engine.KeyState{}, false, err
	}
	rk := ks.IdempotencyKey(key)
	pipe := s.rdb.Pipeline()
	get := pipe.Get(ctx, rk)
	ttl := pipe.PTTL(ctx, rk)
	_, _ = pipe.Exec(ctx)
	owner, err := get.Result()
	if errors.Is(err, redis.Nil) {
		return engine.KeyState{Key: key}, false, nil
	}
	if err != nil {
		return engine.KeyState{}, false, err
	}
	st := engine.KeyState{Key: key, Owner: owner}
	if d, err := ttl.Result(); err == nil && d > 0 {
		st.TTL = d
	}
	return st, true, nil
}
