package redisstore

import (
	"context"
	"strconv"
	"time"
)

// PauseTask marks a task paused from now on: workers start none of its
// runs until ResumeTask, while triggers are accepted as before. It reports
// whether the task was running (false: it was paused already, and keeps
// the time it was paused first).
func (s *Store) PauseTask(ctx context.Context, name string, now time.Time) (bool, error) {
	return s.rdb.HSetNX(ctx, s.keys.Paused(), name, now.UnixMilli()).Result()
}

// ResumeTask lets workers start a paused task's runs again. It reports
// whether the task was paused.
func (s *Store) ResumeTask(ctx context.Context, name string) (bool, error) {
	n, err := s.rdb.HDel(ctx, s.keys.Paused(), name).Result()
	return n > 0, err
}

// PausedTasks returns the paused tasks, each with when it was paused, in
// one round trip: workers read it every PauseRefresh.
func (s *Store) PausedTasks(ctx context.Context) (map[string]time.Time, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.Paused()).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string]time.Time, len(m))
	for name, v := range m {
		ms, _ := strconv.ParseInt(v, 10, 64) // a value not written by PauseTask still pauses
		out[name] = time.UnixMilli(ms)
	}
	return out, nil
}
