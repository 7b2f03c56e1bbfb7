package redisstore

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// readScript reads deliveries by priority: lua/read.lua.
var readScript = loadScript("read")

// ReadByPriority reads up to count new deliveries of each of tasks in
// partition part, each task's the highest priority first, a lower
// priority taking its turn once bound runs of higher ones were read while
// it waited (one call of read.lua, which does not block). more says a
// priority above the default may still hold runs.
func (s *Store) ReadByPriority(ctx context.Context, part int, consumer string, tasks []string, count, bound int) ([]engine.Delivery, bool, error) {
	ks, err := s.partitionKeys(ctx, part)
	if err != nil {
		return nil, false, err
	}
	k := [1 + readKeyCount]string{readKeyTurns: ks.Turns()}
	h := [1 + readArgCount]any{readArgGroup: GroupName, readArgConsumer: consumer, readArgPrefix: ks.Prefix(),
		readArgWanted: max(count, 1), readArgBound: max(bound, 1)}
	args := append(make([]any, 0, readArgCount+readItemArgCount*len(tasks)), h[1:]...)
	for _, t := range tasks {
		a := [readItemArgCount]any{readItemArgTask: t}
		args = append(args, a[:]...)
	}
	v, err := s.runScript(ctx, readScript, k[1:], args...)
	if err != nil {
		return nil, false, err
	}
	flat, _ := v.([]any)
	if len(flat) == 0 || (len(flat)-1)%3 != 0 {
		return nil, false, fmt.Errorf("redisstore: read: unexpected reply %v", v)
	}
	var out []engine.Delivery
	for i := 1; i < len(flat); i += 3 {
		t, prio := int(asInt(flat[i]))-1, int(asInt(flat[i+1]))
		entries, _ := flat[i+2].([]any)
		if t < 0 || t >= len(tasks) {
			return nil, false, fmt.Errorf("redisstore: read: unexpected task %v", flat[i])
		}
		msgs := make([]redis.XMessage, 0, len(entries))
		for _, e := range entries {
			m, _ := e.([]any)
			if len(m) != 2 {
				return nil, false, fmt.Errorf("redisstore: read: unexpected entry %v", e)
			}
			fv, _ := m[1].([]any)
			values := make(map[string]any, len(fv)/2)
			for j := 0; j+1 < len(fv); j += 2 {
				values[asString(fv[j])] = fv[j+1]
			}
			msgs = append(msgs, redis.XMessage{ID: asString(m[0]), Values: values})
		}
		k := ks.Lane(tasks[t], prio)
		out = append(out, s.deliveries([]redis.XStream{{Stream: k, Messages: msgs}}, map[string]lane{k: {tasks[t], prio}})...)
	}
	return out, asInt(flat[0]) == 1, nil
}
