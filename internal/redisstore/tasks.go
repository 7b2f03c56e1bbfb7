package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// GetTask returns a task's registration, or nil when none exists.
func (s *Store) GetTask(ctx context.Context, name string) ([]byte, error) {
	v, err := s.rdb.HGet(ctx, s.keys.Tasks(), name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// ListTasks returns every registration by task name.
func (s *Store) ListTasks(ctx context.Context) (map[string][]byte, error) {
	m, err := s.rdb.HGetAll(ctx, s.keys.Tasks()).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out, nil
}

// MissingTasks returns those of names that have no registration, in one
// round trip.
func (s *Store) MissingTasks(ctx context.Context, names []string) ([]string, error) {
	if len(names) == 0 {
		return nil, nil
	}
	vals, err := s.rdb.HMGet(ctx, s.keys.Tasks(), names...).Result()
	if err != nil {
		return nil, err
	}
	var missing []string
	for i, v := range vals {
		if v == nil {
			missing = append(missing, names[i])
		}
	}
	return missing, nil
}
