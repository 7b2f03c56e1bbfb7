package redisstore

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// RunState is what RunStates reads of one run.
type RunState struct {
	// Status is the run's status, "" when its record is gone.
	Status string
	// Error is why the run ended, as its record holds it ("superseded by
	// run <id>", a cancel's reason, a failure).
	Error string
}

// RunStates reads the status and error of each run in one round trip, for
// a worker to learn that runs it is running, whose attempts are not begun
// yet, have been cancelled.
func (s *Store) RunStates(ctx context.Context, ids []string) ([]RunState, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	cmds := make([]*redis.SliceCmd, len(ids))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			if ks, err := parts.runKeys(id); err == nil {
				cmds[i] = p.HMGet(ctx, ks.Run(id), runStatus, runError)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]RunState, len(ids))
	for i, c := range cmds {
		if c == nil {
			continue // a run that cannot exist: gone
		}
		v := c.Val()
		out[i].Status, _ = v[0].(string)
		out[i].Error, _ = v[1].(string)
	}
	return out, nil
}
