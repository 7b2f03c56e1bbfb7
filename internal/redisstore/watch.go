package redisstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// watchScript asks for a run's completion notice: lua/watch.lua.
var watchScript = loadScript("watch")

// WatchRun asks for the run's completion notice on its DoneChannel, which
// is published only for runs watched before they end, and returns its
// status. Subscribe to the channel first: a run that ends after WatchRun
// is published, and one that had ended shows in the status returned.
func (s *Store) WatchRun(ctx context.Context, id string) (string, error) {
	ks, err := s.keysOfRun(ctx, id)
	if err != nil {
		return "", err
	}
	k := [1 + watchKeyCount]string{watchKeyRun: ks.Run(id)}
	v, err := s.runScript(ctx, watchScript, k[1:])
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: %s", engine.ErrRunNotFound, id)
	}
	if err != nil {
		return "", err
	}
	return asString(v), nil
}
