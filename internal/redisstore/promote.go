package redisstore

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
)

// promoteScript queues runs whose retry is due: lua/promote.lua.
var promoteScript = loadScript("promote")

// Promote queues up to limit runs of partition part whose retry is due.
func (s *Store) Promote(ctx context.Context, part int, now time.Time, limit int) (int, error) {
	n, _, err := s.PromoteDue(ctx, part, now, limit)
	return n, err
}

// PromoteDue is Promote, also returning when the earliest run still
// waiting in the partition's retry zset is due (the zero time when none
// is), in the same call.
func (s *Store) PromoteDue(ctx context.Context, part int, now time.Time, limit int) (moved int, next time.Time, err error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return 0, time.Time{}, err
	}
	k := [1 + promoteKeyCount]string{promoteKeyRetry: ks.Retry()}
	a := [1 + promoteArgCount]any{promoteArgNow: unixMS(now), promoteArgLimit: limit, promoteArgPrefix: ks.Prefix()}
	v, err := s.runScript(ctx, promoteScript, k[1:], a[1:]...)
	if err != nil {
		return 0, time.Time{}, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return 0, time.Time{}, fmt.Errorf("redisstore: promote: unexpected reply %v", v)
	}
	// A wait without a timeout (+inf) is never due: only a signal wakes it.
	if due := asString(r[1]); due != "" {
		if ms, err := strconv.ParseFloat(due, 64); err == nil && !math.IsInf(ms, 1) {
			next = fromMS(int64(ms))
		}
	}
	return int(asInt(r[0])), next, nil
}
