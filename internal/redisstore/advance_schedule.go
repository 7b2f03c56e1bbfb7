package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// advanceScheduleScript moves a schedule's cursor: lua/advance_schedule.lua.
var advanceScheduleScript = loadScript("advance_schedule")

// AdvanceSchedule moves a schedule's cursor to tick unless it is already
// at or past it, and returns the cursor then; ok is false when there is no
// such schedule (nothing is written).
func (s *Store) AdvanceSchedule(ctx context.Context, name string, tick time.Time) (cursor time.Time, ok bool, err error) {
	k := [1 + advanceScheduleKeyCount]string{advanceScheduleKeySchedule: s.keys.Schedule(name)}
	a := [1 + advanceScheduleArgCount]any{advanceScheduleArgTick: unixMS(tick)}
	v, err := s.runScript(ctx, advanceScheduleScript, k[1:], a[1:]...)
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(asString(v), 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("redisstore: advance_schedule: unexpected reply %v", v)
	}
	return fromMS(ms), true, nil
}
