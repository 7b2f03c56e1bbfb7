package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// ratelimitTakeScript takes units of rate limits: lua/ratelimit_take.lua.
var ratelimitTakeScript = loadScript("ratelimit_take")

// RateLimitPartition is the partition whose slot holds a rate limit's log
// for one value of its key: a function of the namespace, the limit's name
// and the key alone, so that every worker, whatever task uses the limit,
// takes its units in the same place. Different keys of one limit spread
// over the partitions.
func RateLimitPartition(ns, name, key string, n int) int {
	return engine.KeyPartition(ns, keyRateLimit+name+"\x00"+key, n)
}

// TakeRateLimits takes the units of each request, each on its own, in one
// call of the take script per partition (or more, past MaxItemsPerCall),
// all sent in one pipeline. now is the time to measure the windows by; the
// zero time uses the Redis server's clock, as workers should: one clock
// for every worker sharing a limit, whatever their skew. The i-th result
// and error belong to the i-th request.
func (s *Store) TakeRateLimits(ctx context.Context, now time.Time, reqs []engine.RateTake) ([]engine.RateTakeResult, []error) {
	res := make([]engine.RateTakeResult, len(reqs))
	errs := make([]error, len(reqs))
	parts, err := s.Partitions(ctx)
	if err != nil {
		return res, fillErr(errs, err)
	}
	at := ""
	if !now.IsZero() {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	part := func(i int) int { return RateLimitPartition(s.keys.ns, reqs[i].Name, reqs[i].Key, parts.Count()) }
	groups := groupByPartition(len(reqs), parts.Count(), func(i int) (int, error) { return part(i), nil }, errs)
	keepFirst(errs, s.evalBatch(ctx, ratelimitTakeScript, groups, len(reqs), func(items []int) ([]string, []any) {
		ks := parts.keys[part(items[0])]
		keys := make([]string, ratelimitTakeKeyCount, ratelimitTakeKeyCount+ratelimitTakeItemKeyCount*len(items))
		h := [1 + ratelimitTakeArgCount]any{ratelimitTakeArgNow: at}
		args := append(make([]any, 0, ratelimitTakeArgCount+ratelimitTakeItemArgCount*len(items)), h[1:]...)
		for _, i := range items {
			r := reqs[i]
			k := [ratelimitTakeItemKeyCount]string{ratelimitTakeItemKeyLimit: ks.RateLimit(r.Name, r.Key)}
			a := [ratelimitTakeItemArgCount]any{
				ratelimitTakeItemArgToken:  r.Token,
				ratelimitTakeItemArgUnits:  r.Units,
				ratelimitTakeItemArgLimit:  r.Limit,
				ratelimitTakeItemArgPeriod: r.Period.Microseconds(),
			}
			keys, args = append(keys, k[:]...), append(args, a[:]...)
		}
		return keys, args
	}, func(i int, r []any) (int, error) {
		if len(r) < 2 {
			return len(r), fmt.Errorf("redisstore: ratelimit_take: unexpected reply %v", r)
		}
		if err, ok := r[0].(error); ok {
			return 2, s.named("ratelimit_take", scriptError(err))
		}
		n, err := strconv.ParseInt(asString(r[1]), 10, 64)
		if err != nil {
			return 2, fmt.Errorf("redisstore: ratelimit_take: unexpected reply %v", r[:2])
		}
		if asInt(r[0]) == 1 {
			res[i] = engine.RateTakeResult{Taken: true, Used: int(n)}
		} else {
			res[i] = engine.RateTakeResult{Wait: time.Duration(n) * time.Microsecond}
		}
		return 2, nil
	}))
	return res, errs
}
