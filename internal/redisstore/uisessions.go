package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Dashboard sessions: a signed-in session is live while its record exists
// and holds the sign-out generation in force. Signing out deletes the
// record; signing out everywhere raises the generation, which ends every
// record written before. Both keys are in the home partition (one slot),
// so a check is one MGET. The records hold no secret: a session's cookie
// is signed by the dashboard, and its ID (a hash of the cookie's nonce)
// only names it.

// UISessionSave records session id as live for ttl, in the generation in
// force now.
func (s *Store) UISessionSave(ctx context.Context, id string, ttl time.Duration) error {
	gen, err := s.rdb.Get(ctx, s.keys.UISessionGeneration()).Result()
	if errors.Is(err, redis.Nil) {
		gen, err = "0", nil
	}
	if err != nil {
		return err
	}
	return s.rdb.Set(ctx, s.keys.UISession(id), gen, ttl).Err()
}

// UISessionLive reports whether session id is live: recorded, not
// deleted, not expired, and of the generation in force.
func (s *Store) UISessionLive(ctx context.Context, id string) (bool, error) {
	v, err := s.rdb.MGet(ctx, s.keys.UISession(id), s.keys.UISessionGeneration()).Result()
	if err != nil {
		return false, err
	}
	rec, ok := v[0].(string)
	if !ok {
		return false, nil
	}
	gen, _ := v[1].(string)
	if gen == "" {
		gen = "0"
	}
	return rec == gen, nil
}

// UISessionDelete ends session id.
func (s *Store) UISessionDelete(ctx context.Context, id string) error {
	return s.rdb.Del(ctx, s.keys.UISession(id)).Err()
}

// UISessionEndAll ends every session recorded so far, by raising the
// generation, and returns the new one.
func (s *Store) UISessionEndAll(ctx context.Context) (int64, error) {
	return s.rdb.Incr(ctx, s.keys.UISessionGeneration()).Result()
}
