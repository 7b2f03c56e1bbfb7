package redisstore

import (
	"context"
	"time"
)

// pauseScheduleScript pauses or resumes a cron schedule: lua/pause_schedule.lua.
var pauseScheduleScript = loadScript("pause_schedule")

// SetSchedulePaused pauses or resumes a schedule; resuming moves its
// cursor to now, so the ticks it had while paused do not fire. It reports
// false when there is no such schedule.
func (s *Store) SetSchedulePaused(ctx context.Context, name string, paused bool, now time.Time) (bool, error) {
	p := "0"
	if paused {
		p = "1"
	}
	k := [1 + pauseScheduleKeyCount]string{pauseScheduleKeySchedule: s.keys.Schedule(name)}
	a := [1 + pauseScheduleArgCount]any{pauseScheduleArgPaused: p, pauseScheduleArgNow: unixMS(now)}
	v, err := s.runScript(ctx, pauseScheduleScript, k[1:], a[1:]...)
	if err != nil {
		return false, err
	}
	return asInt(v) == 1, nil
}
