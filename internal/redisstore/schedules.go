package redisstore

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// A namespace's cron schedules live in its home partition: one hash per
// schedule (its definition, paused state and cursor, see layout.go) and a
// set of their names. Each change is a script of its own:
// save_schedule.go, pause_schedule.go, delete_schedule.go and
// advance_schedule.go.

// GetSchedule returns one schedule, or nil when there is none.
func (s *Store) GetSchedule(ctx context.Context, name string) (*engine.ScheduleRecord, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.Schedule(name)).Result()
	if err != nil {
		return nil, err
	}
	return scheduleOf(name, m), nil
}

// ListSchedules returns every schedule of the namespace, by name: the
// index and then the records, two round trips to the home partition.
func (s *Store) ListSchedules(ctx context.Context) ([]engine.ScheduleRecord, error) {
	names, err := s.rdb.SMembers(ctx, s.keys.Schedules()).Result()
	if err != nil || len(names) == 0 {
		return nil, err
	}
	sort.Strings(names)
	pipe := s.rdb.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(names))
	for i, n := range names {
		cmds[i] = pipe.HGetAll(ctx, s.keys.Schedule(n))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, err
	}
	out := make([]engine.ScheduleRecord, 0, len(names))
	for i, n := range names {
		// A schedule deleted between the two reads is left out.
		if r := scheduleOf(n, cmds[i].Val()); r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// scheduleOf reads a schedule hash; nil when it has no definition.
func scheduleOf(name string, m map[string]string) *engine.ScheduleRecord {
	def, ok := m[scheduleDefinition]
	if !ok {
		return nil
	}
	at := func(f string) time.Time {
		v, err := strconv.ParseInt(m[f], 10, 64)
		if err != nil {
			return time.Time{}
		}
		return fromMS(v)
	}
	return &engine.ScheduleRecord{
		Name: name, Definition: []byte(def), Paused: m[schedulePaused] == "1",
		Cursor: at(scheduleCursor), Created: at(scheduleCreated), Updated: at(scheduleUpdated),
	}
}
