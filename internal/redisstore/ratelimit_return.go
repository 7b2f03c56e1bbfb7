package redisstore

import (
	"context"
	"fmt"

	"github.com/taskq/taskq/internal/engine"
)

// ratelimitReturnScript gives units back: lua/ratelimit_return.lua.
var ratelimitReturnScript = loadScript("ratelimit_return")

// ReturnRateLimits gives back the units requests took (their Name, Key,
// Units and Token as TakeRateLimits had them) when their run does not
// start after all, in one call per partition, all in one pipeline. The
// i-th count (units removed) and error belong to the i-th request.
func (s *Store) ReturnRateLimits(ctx context.Context, reqs []engine.RateTake) ([]int, []error) {
	res := make([]int, len(reqs))
	errs := make([]error, len(reqs))
	parts, err := s.Partitions(ctx)
	if err != nil {
		return res, fillErr(errs, err)
	}
	part := func(i int) int { return RateLimitPartition(s.keys.ns, reqs[i].Name, reqs[i].Key, parts.Count()) }
	groups := groupByPartition(len(reqs), parts.Count(), func(i int) (int, error) { return part(i), nil }, errs)
	keepFirst(errs, s.evalBatch(ctx, ratelimitReturnScript, groups, len(reqs), func(items []int) ([]string, []any) {
		ks := parts.keys[part(items[0])]
		keys := make([]string, ratelimitReturnKeyCount, ratelimitReturnKeyCount+ratelimitReturnItemKeyCount*len(items))
		args := make([]any, ratelimitReturnArgCount, ratelimitReturnArgCount+ratelimitReturnItemArgCount*len(items))
		for _, i := range items {
			r := reqs[i]
			k := [ratelimitReturnItemKeyCount]string{ratelimitReturnItemKeyLimit: ks.RateLimit(r.Name, r.Key)}
			a := [ratelimitReturnItemArgCount]any{ratelimitReturnItemArgToken: r.Token, ratelimitReturnItemArgUnits: r.Units}
			keys, args = append(keys, k[:]...), append(args, a[:]...)
		}
		return keys, args
	}, func(i int, r []any) (int, error) {
		switch v := r[0].(type) {
		case error:
			return 1, s.named("ratelimit_return", scriptError(v))
		case int64:
			res[i] = int(v)
			return 1, nil
		}
		return 1, fmt.Errorf("redisstore: ratelimit_return: unexpected reply %v", r[0])
	}))
	return res, errs
}
