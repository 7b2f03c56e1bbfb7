package redisstore

import "context"

// ensureGroupScript creates a task's stream and consumer group:
// lua/ensure_group.lua.
var ensureGroupScript = loadScript("ensure_group", "errors")

// EnsureGroup creates the task's stream and consumer group if missing. The
// group starts at the stream's beginning so runs queued before any worker
// existed are delivered. It is a script that runs at maxmemory (see
// ensure_group.lua), where Redis refuses XGROUP CREATE on its own: workers
// must be able to start and drain the queue then.
func (s *Store) EnsureGroup(ctx context.Context, task string) error {
	k := [1 + ensureGroupKeyCount]string{ensureGroupKeyStream: s.keys.Stream(task)}
	a := [1 + ensureGroupArgCount]any{ensureGroupArgGroup: GroupName}
	_, err := s.runScript(ctx, ensureGroupScript, k[1:], a[1:]...)
	return err
}
