package redisstore

import (
	"context"
	"time"
)

// promoteScript queues runs whose retry is due: lua/promote.lua.
var promoteScript = loadScript("promote", "stream")

// Promote queues up to limit runs of partition part whose retry is due.
func (s *Store) Promote(ctx context.Context, part int, now time.Time, limit int) (int, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return 0, err
	}
	k := [1 + promoteKeyCount]string{promoteKeyRetry: ks.Retry()}
	a := [1 + promoteArgCount]any{promoteArgNow: unixMS(now), promoteArgLimit: limit, promoteArgPrefix: ks.Prefix()}
	v, err := s.runScript(ctx, promoteScript, k[1:], a[1:]...)
	if err != nil {
		return 0, err
	}
	return int(asInt(v)), nil
}
