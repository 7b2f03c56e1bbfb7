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
	at := ""
	if !now.IsZero() {
		at = strconv.FormatInt(now.UnixMicro(), 10)
	}
	head := [1 + ratelimitTakeArgCount]any{ratelimitTakeArgNow: at}
	return runBatch(ctx, s, batchOp[engine.RateTake, engine.RateTakeResult]{
		script: ratelimitTakeScript,
		part:   rateLimitPart,
		call: func(ks Keys, items []engine.RateTake) ([]string, []any) {
			return itemsCall(nil, head[1:], items, func(r engine.RateTake, keys []string, args []any) ([]string, []any) {
				k := [ratelimitTakeItemKeyCount]string{ratelimitTakeItemKeyLimit: ks.RateLimit(r.Name, r.Key)}
				a := [ratelimitTakeItemArgCount]any{
					ratelimitTakeItemArgToken:  r.Token,
					ratelimitTakeItemArgUnits:  r.Units,
					ratelimitTakeItemArgLimit:  r.Limit,
					ratelimitTakeItemArgPeriod: r.Period.Microseconds(),
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.RateTake, r []any) (engine.RateTakeResult, int, error) {
			if len(r) < 2 {
				return engine.RateTakeResult{}, len(r), fmt.Errorf("redisstore: ratelimit_take: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return engine.RateTakeResult{}, 2, s.named("ratelimit_take", scriptError(err))
			}
			n, err := strconv.ParseInt(asString(r[1]), 10, 64)
			if err != nil {
				return engine.RateTakeResult{}, 2, fmt.Errorf("redisstore: ratelimit_take: unexpected reply %v", r[:2])
			}
			if asInt(r[0]) == 1 {
				return engine.RateTakeResult{Taken: true, Used: int(n)}, 2, nil
			}
			return engine.RateTakeResult{Wait: time.Duration(n) * time.Microsecond}, 2, nil
		},
	}, reqs)
}

// rateLimitPart is the partition of a request's limit.
func rateLimitPart(parts *Partitions, r engine.RateTake) (int, error) {
	return RateLimitPartition(parts.ns, r.Name, r.Key, parts.Count()), nil
}
