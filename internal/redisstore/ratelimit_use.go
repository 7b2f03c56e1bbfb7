package redisstore

import (
	"context"
	"strconv"
	"time"
)

// RateLimitUse reads how many units a rate limit's log for key ("" for a
// limit without one) holds in the window of period that ends now, by the
// server's clock as ratelimit_take.lua measures: the units taken in the
// last period. It writes nothing (units older than the period wait for the
// next take to be dropped).
func (s *Store) RateLimitUse(ctx context.Context, name, key string, period time.Duration) (int, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return 0, err
	}
	log := parts.keys[RateLimitPartition(s.keys.ns, name, key, parts.Count())].RateLimit(name, key)
	now, err := s.rdb.Time(ctx).Result()
	if err != nil {
		return 0, err
	}
	since := "(" + strconv.FormatInt(now.UnixMicro()-period.Microseconds(), 10)
	n, err := s.rdb.ZCount(ctx, log, since, "+inf").Result()
	return int(n), scriptError(err)
}
