package redisstore

import (
	"context"
	"fmt"

	"github.com/taskq/taskq/internal/engine"
)

// ratelimitDeferScript holds back runs a rate limit refused:
// lua/ratelimit_defer.lua.
var ratelimitDeferScript = loadScript("ratelimit_defer")

// DeferRuns holds back each delivery's run until its Due time, in one call
// of the defer script per partition, all in one pipeline: promote.lua
// queues it again then (see Promote). The i-th result and error belong to
// the i-th deferral.
func (s *Store) DeferRuns(ctx context.Context, ds []engine.Deferral) ([]engine.DeferResult, []error) {
	return runBatch(ctx, s, batchOp[engine.Deferral, engine.DeferResult]{
		script: ratelimitDeferScript,
		part:   func(parts *Partitions, d engine.Deferral) (int, error) { return runPartition(parts, d.RunID) },
		call: func(ks Keys, sub []engine.Deferral) ([]string, []any) {
			hk := [1 + ratelimitDeferKeyCount]string{ratelimitDeferKeyRetry: ks.Retry()}
			ha := [1 + ratelimitDeferArgCount]any{ratelimitDeferArgGroup: GroupName}
			return itemsCall(hk[1:], ha[1:], sub, func(d engine.Deferral, keys []string, args []any) ([]string, []any) {
				k := [ratelimitDeferItemKeyCount]string{
					ratelimitDeferItemKeyRun:    ks.Run(d.RunID),
					ratelimitDeferItemKeyStream: ks.Lane(d.Task, d.Priority),
				}
				a := [ratelimitDeferItemArgCount]any{
					ratelimitDeferItemArgRunID:  d.RunID,
					ratelimitDeferItemArgEntry:  d.EntryID,
					ratelimitDeferItemArgDue:    unixMS(d.Due),
					ratelimitDeferItemArgReason: d.Reason,
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.Deferral, r []any) (engine.DeferResult, int, error) {
			if len(r) < 2 {
				return engine.DeferResult{}, len(r), fmt.Errorf("redisstore: ratelimit_defer: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return engine.DeferResult{}, 2, s.named("ratelimit_defer", scriptError(err))
			}
			return engine.DeferResult{Held: asInt(r[0]) == 1, Reason: asString(r[1])}, 2, nil
		},
	}, ds)
}
