package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// concurrencyAcquireScript asks for slots: lua/concurrency_acquire.lua.
var concurrencyAcquireScript = loadScript("concurrency_acquire")

// AcquireSlots asks for the slots of ps at now, one script call per
// partition the groups are in (sent in one pipeline). The i-th result and
// error belong to the i-th params.
func (s *Store) AcquireSlots(ctx context.Context, now time.Time, ps []engine.AcquireParams) ([]engine.AcquireResult, []error) {
	head := [1 + concurrencyAcquireArgCount]any{concurrencyAcquireArgNow: unixMS(now)}
	return runBatch(ctx, s, batchOp[engine.AcquireParams, engine.AcquireResult]{
		script: concurrencyAcquireScript,
		part: func(parts *Partitions, p engine.AcquireParams) (int, error) {
			return parts.ofGroup(concTask(p.Task, p.Index), p.Group), nil
		},
		call: func(ks Keys, items []engine.AcquireParams) ([]string, []any) {
			return itemsCall(nil, head[1:], items, func(p engine.AcquireParams, keys []string, args []any) ([]string, []any) {
				k := [concurrencyAcquireItemKeyCount]string{
					concurrencyAcquireItemKeyHolders: ks.ConcurrencyHolders(concTask(p.Task, p.Index), p.Group),
					concurrencyAcquireItemKeyOwners:  ks.ConcurrencyOwners(concTask(p.Task, p.Index), p.Group),
					concurrencyAcquireItemKeyWaiting: ks.ConcurrencyWaiting(concTask(p.Task, p.Index), p.Group),
				}
				a := [concurrencyAcquireItemArgCount]any{
					concurrencyAcquireItemArgRunID:    p.RunID,
					concurrencyAcquireItemArgToken:    p.Token,
					concurrencyAcquireItemArgMaxRuns:  p.MaxRuns,
					concurrencyAcquireItemArgStrategy: p.Strategy,
					concurrencyAcquireItemArgLease:    p.Lease.Milliseconds(),
					concurrencyAcquireItemArgCreated:  unixMS(p.Created),
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.AcquireParams, r []any) (engine.AcquireResult, int, error) {
			if len(r) < 3 {
				return engine.AcquireResult{}, len(r), fmt.Errorf("redisstore: concurrency_acquire: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return engine.AcquireResult{}, 3, s.named("concurrency_acquire", scriptError(err))
			}
			return engine.AcquireResult{Outcome: engine.AcquireOutcome(asString(r[0])), Holders: int(asInt(r[1])), Evicted: asString(r[2])}, 3, nil
		},
	}, ps)
}
