package redisstore

import (
	"context"
	"fmt"
	"strconv"

	"github.com/taskq/taskq/internal/engine"
)

// heartbeatScript extends leases: lua/heartbeat.lua.
var heartbeatScript = loadScript("heartbeat")

// Heartbeat extends the leases consumer holds on task's streams: one call
// per partition the leases' runs are in and priority. It fails as a whole when any
// call does.
func (s *Store) Heartbeat(ctx context.Context, task, consumer string, leases []engine.Lease) ([]engine.LeaseReport, error) {
	out, errs := runBatch(ctx, s, batchOp[engine.Lease, engine.LeaseReport]{
		script: heartbeatScript,
		part:   func(parts *Partitions, l engine.Lease) (int, error) { return runPartition(parts, l.RunID) },
		// A call renews the leases of one stream: one priority's.
		split: func(l engine.Lease) string { return strconv.Itoa(max(l.Priority, engine.PriorityDefault)) },
		call: func(ks Keys, sub []engine.Lease) ([]string, []any) {
			k := [1 + heartbeatKeyCount]string{heartbeatKeyStream: ks.Lane(task, sub[0].Priority)}
			h := [1 + heartbeatArgCount]any{
				heartbeatArgGroup:    GroupName,
				heartbeatArgConsumer: consumer,
				heartbeatArgPrefix:   ks.Prefix(),
			}
			return itemsCall(k[1:], h[1:], sub, func(l engine.Lease, keys []string, args []any) ([]string, []any) {
				a := [heartbeatItemArgCount]any{
					heartbeatItemArgEntry:   l.EntryID,
					heartbeatItemArgRunID:   l.RunID,
					heartbeatItemArgAttempt: l.Attempt,
				}
				return keys, append(args, a[:]...)
			})
		},
		reply: func(_ engine.Lease, r []any) (engine.LeaseReport, int, error) {
			if len(r) < 2 {
				return engine.LeaseReport{}, len(r), fmt.Errorf("redisstore: heartbeat: unexpected reply %v", r)
			}
			return engine.LeaseReport{State: engine.LeaseState(asInt(r[0])), Reason: asString(r[1])}, 2, nil
		},
	}, leases)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
