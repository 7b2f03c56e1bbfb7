package redisstore

import (
	"context"
)

// deleteScheduleScript deletes a cron schedule: lua/delete_schedule.lua.
var deleteScheduleScript = loadScript("delete_schedule")

// DeleteSchedule deletes a schedule and its cursor; it reports false when
// there was none.
func (s *Store) DeleteSchedule(ctx context.Context, name string) (bool, error) {
	k := [1 + deleteScheduleKeyCount]string{deleteScheduleKeySchedule: s.keys.Schedule(name), deleteScheduleKeySchedules: s.keys.Schedules()}
	a := [1 + deleteScheduleArgCount]any{deleteScheduleArgName: name}
	v, err := s.runScript(ctx, deleteScheduleScript, k[1:], a[1:]...)
	if err != nil {
		return false, err
	}
	return asInt(v) == 1, nil
}
