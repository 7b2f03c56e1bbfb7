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
	return runBatch(ctx, s, batchOp[engine.RateTake, int]{
		script: ratelimitReturnScript,
		part:   rateLimitPart,
		call: func(ks Keys, items []engine.RateTake) ([]string, []any) {
			return itemsCall(nil, make([]any, ratelimitReturnArgCount), items, func(r engine.RateTake, keys []string, args []any) ([]string, []any) {
				k := [ratelimitReturnItemKeyCount]string{ratelimitReturnItemKeyLimit: ks.RateLimit(r.Name, r.Key)}
				a := [ratelimitReturnItemArgCount]any{ratelimitReturnItemArgToken: r.Token, ratelimitReturnItemArgUnits: r.Units}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.RateTake, r []any) (int, int, error) {
			switch v := r[0].(type) {
			case error:
				return 0, 1, s.named("ratelimit_return", scriptError(v))
			case int64:
				return int(v), 1, nil
			}
			return 0, 1, fmt.Errorf("redisstore: ratelimit_return: unexpected reply %v", r[0])
		},
	}, reqs)
}
