package redisstore

import (
	"context"
	"errors"
	"strconv"
)

// A trigger's script can run twice: when the connection breaks after Redis
// ran it but before the reply arrived, go-redis sends the command again on a
// new connection. The second run finds what the first one did, the key held
// by this very run or its record already written, and would report a
// collision with itself or TASKQ_EXISTS. fromResend turns those replies back
// into what happened: this trigger created the run. (What a superseding
// first run took over is not known any more; Superseded stays empty.)
func (s *Store) fromResend(ctx context.Context, p *EnqueueParams, res EnqueueResult, err error) (EnqueueResult, error) {
	switch {
	case err == nil && !res.Accepted && res.Owner == p.RunID:
		return EnqueueResult{Outcome: TriggerCreated, Accepted: true}, nil
	case errors.Is(err, ErrRunExists) && s.isOwnRecord(ctx, p):
		return EnqueueResult{Outcome: TriggerCreated, Accepted: true}, nil
	}
	return res, err
}

// isOwnRecord reports whether the record of p.RunID was written by this
// very trigger: same task, input and creation time.
func (s *Store) isOwnRecord(ctx context.Context, p *EnqueueParams) bool {
	v, err := s.rdb.HMGet(ctx, s.keys.Run(p.RunID), "task", "created", "input").Result()
	if err != nil || len(v) != 3 {
		return false
	}
	return v[0] == p.Task && v[1] == strconv.FormatInt(unixMS(p.Now), 10) && v[2] == string(p.Input)
}
