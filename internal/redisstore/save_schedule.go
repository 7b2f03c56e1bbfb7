package redisstore

import (
	"context"
	"fmt"
	"time"
)

// saveScheduleScript registers a cron schedule: lua/save_schedule.lua.
var saveScheduleScript = loadScript("save_schedule")

// SaveSchedule registers a schedule (definition, JSON) and returns the
// definition it replaced (nil if none). With replace false an existing
// schedule is left as it is and written reports false. A new schedule's
// cursor is now, and it starts paused when paused is set; a replaced one
// keeps its cursor and paused state.
func (s *Store) SaveSchedule(ctx context.Context, name string, definition []byte, replace, paused bool, now time.Time) (written bool, previous []byte, err error) {
	mode, p := "create", "0"
	if replace {
		mode = "replace"
	}
	if paused {
		p = "1"
	}
	k := [1 + saveScheduleKeyCount]string{saveScheduleKeySchedule: s.keys.Schedule(name), saveScheduleKeySchedules: s.keys.Schedules()}
	a := [1 + saveScheduleArgCount]any{saveScheduleArgName: name, saveScheduleArgDefinition: definition,
		saveScheduleArgMode: mode, saveScheduleArgPaused: p, saveScheduleArgNow: unixMS(now)}
	v, err := s.runScript(ctx, saveScheduleScript, k[1:], a[1:]...)
	if err != nil {
		return false, nil, err
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 1 {
		return false, nil, fmt.Errorf("redisstore: save_schedule: unexpected reply %v", v)
	}
	if len(r) > 1 && r[1] != nil {
		previous = []byte(asString(r[1]))
	}
	return asInt(r[0]) == 1, previous, nil
}
