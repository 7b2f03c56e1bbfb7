package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// RunStates reads the status and error of each run in one round trip, for
// a worker to learn that runs it is running, whose attempts are not begun
// yet, have been cancelled.
func (s *Store) RunStates(ctx context.Context, ids []string) ([]engine.RunState, error) {
	vals, err := s.runFields(ctx, ids, runStatus, runError)
	if err != nil {
		return nil, err
	}
	out := make([]engine.RunState, len(ids))
	for i, v := range vals {
		out[i] = engine.RunState{Status: v[0], Error: v[1]}
	}
	return out, nil
}

// runFields reads fields of each run's record in one round trip: the i-th
// row holds run ids[i]'s values, "" for a field, or a whole record, that
// is not there (a run ID that names no partition is gone).
func (s *Store) runFields(ctx context.Context, ids []string, fields ...string) ([][]string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			if ks, err := parts.runKeys(id); err == nil {
				cmds[i] = p.HMGet(ctx, ks.Run(id), fields...)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(ids))
	for i, c := range cmds {
		out[i] = make([]string, len(fields))
		if c == nil {
			continue
		}
		for j, v := range c.Val() {
			out[i][j], _ = v.(string)
		}
	}
	return out, nil
}
