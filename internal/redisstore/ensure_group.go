package redisstore

import "context"

// ensureGroupScript creates a task's stream and consumer group:
// lua/ensure_group.lua.
var ensureGroupScript = loadScript("ensure_group")

// EnsureGroup creates the task's streams, one per priority, and their
// consumer group in every partition, where missing. The group starts at the stream's beginning so
// runs queued before any worker existed are delivered. It is a script that
// runs at maxmemory (see ensure_group.lua), where Redis refuses XGROUP
// CREATE on its own: workers must be able to start and drain the queue
// then.
func (s *Store) EnsureGroup(ctx context.Context, task string) error {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return err
	}
	calls := make([]scriptCall, parts.Count())
	for i := range calls {
		k := [1 + ensureGroupKeyCount]string{ensureGroupKeyStream: parts.keys[i].Stream(task)}
		a := [1 + ensureGroupArgCount]any{ensureGroupArgGroup: GroupName}
		calls[i] = scriptCall{Keys: k[1:], Args: a[1:]}
	}
	s.runScripts(ctx, ensureGroupScript, calls)
	for _, c := range calls {
		if c.Err != nil {
			return c.Err
		}
	}
	return nil
}
