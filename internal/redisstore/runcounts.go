package redisstore

import (
	"context"

	"github.com/taskq/taskq/internal/engine"
)

// RunTaskStatuses reads the task and status of each run in one round trip,
// for counting runs without reading their inputs and results.
func (s *Store) RunTaskStatuses(ctx context.Context, ids []string) ([]engine.RunTaskStatus, error) {
	vals, err := s.runFields(ctx, ids, runTask, runStatus)
	if err != nil {
		return nil, err
	}
	out := make([]engine.RunTaskStatus, len(ids))
	for i, v := range vals {
		out[i] = engine.RunTaskStatus{Task: v[0], Status: v[1]}
	}
	return out, nil
}
