package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// RunTaskStatus is a run's task and status, as RunTaskStatuses reads them;
// both "" when its record is gone.
type RunTaskStatus struct {
	Task   string
	Status string
}

// RunTaskStatuses reads the task and status of each run in one round trip,
// for counting runs without reading their inputs and results.
func (s *Store) RunTaskStatuses(ctx context.Context, ids []string) ([]RunTaskStatus, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			if ks, err := parts.runKeys(id); err == nil {
				cmds[i] = p.HMGet(ctx, ks.Run(id), runTask, runStatus)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]RunTaskStatus, len(ids))
	for i, c := range cmds {
		if c == nil {
			continue
		}
		v := c.Val()
		out[i].Task, _ = v[0].(string)
		out[i].Status, _ = v[1].(string)
	}
	return out, nil
}
