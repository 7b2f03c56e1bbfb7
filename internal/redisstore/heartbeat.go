package redisstore

import (
	"context"
	"fmt"
)

// heartbeatScript extends leases: lua/heartbeat.lua.
var heartbeatScript = loadScript("heartbeat")

// Heartbeat extends the leases consumer holds on task's streams: one call
// per partition the leases' runs are in. It fails as a whole when any
// call does.
func (s *Store) Heartbeat(ctx context.Context, task, consumer string, leases []Lease) ([]LeaseReport, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]LeaseReport, len(leases))
	errs := make([]error, len(leases))
	groups := groupByPartition(len(leases), parts.Count(), func(i int) (int, error) { return runPartition(parts, leases[i].RunID) }, errs)
	keepFirst(errs, s.evalBatch(ctx, heartbeatScript, groups, len(leases), func(items []int) ([]string, []any) {
		ks := parts.keys[mustPartition(parts, leases[items[0]].RunID)]
		k := [1 + heartbeatKeyCount]string{heartbeatKeyStream: ks.Stream(task)}
		h := [1 + heartbeatArgCount]any{
			heartbeatArgGroup:    GroupName,
			heartbeatArgConsumer: consumer,
			heartbeatArgPrefix:   ks.Prefix(),
		}
		args := append(make([]any, 0, heartbeatArgCount+heartbeatItemArgCount*len(items)), h[1:]...)
		for _, i := range items {
			l := leases[i]
			a := [heartbeatItemArgCount]any{
				heartbeatItemArgEntry:   l.EntryID,
				heartbeatItemArgRunID:   l.RunID,
				heartbeatItemArgAttempt: l.Attempt,
			}
			args = append(args, a[:]...)
		}
		return k[1:], args
	}, func(i int, r []any) (int, error) {
		if len(r) < 2 {
			return len(r), fmt.Errorf("redisstore: heartbeat: unexpected reply %v", r)
		}
		out[i] = LeaseReport{State: LeaseState(asInt(r[0])), Reason: asString(r[1])}
		return 2, nil
	}))
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
