package redisstore

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// registerScript records a task definition: lua/register.lua.
var registerScript = loadScript("register")

// RegisterTask stores a task's registration (JSON) and returns the one it
// replaced (nil if none). With replace false an existing registration is
// left as it is.
func (s *Store) RegisterTask(ctx context.Context, name string, record []byte, replace bool) ([]byte, error) {
	mode := "keep"
	if replace {
		mode = "replace"
	}
	k := [1 + registerKeyCount]string{registerKeyTasks: s.keys.Tasks()}
	a := [1 + registerArgCount]any{registerArgName: name, registerArgRegistration: record, registerArgMode: mode}
	v, err := s.runScript(ctx, registerScript, k[1:], a[1:]...)
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []byte(asString(v)), nil
}
