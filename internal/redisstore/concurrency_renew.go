package redisstore

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// concurrencyRenewScript renews slot leases: lua/concurrency_renew.lua.
var concurrencyRenewScript = loadScript("concurrency_renew")

// RenewSlots renews the slots of ps at now, one script call per partition
// the groups are in (sent in one pipeline). The i-th result says whether
// the i-th slot was still held with its token.
func (s *Store) RenewSlots(ctx context.Context, now time.Time, ps []engine.RenewParams) ([]bool, []error) {
	head := [1 + concurrencyRenewArgCount]any{concurrencyRenewArgNow: unixMS(now)}
	return runBatch(ctx, s, batchOp[engine.RenewParams, bool]{
		script: concurrencyRenewScript,
		part: func(parts *Partitions, p engine.RenewParams) (int, error) {
			return parts.ofGroup(concTask(p.Task, p.Index), p.Group), nil
		},
		call: func(ks Keys, items []engine.RenewParams) ([]string, []any) {
			return itemsCall(nil, head[1:], items, func(p engine.RenewParams, keys []string, args []any) ([]string, []any) {
				k := [concurrencyRenewItemKeyCount]string{
					concurrencyRenewItemKeyHolders: ks.ConcurrencyHolders(concTask(p.Task, p.Index), p.Group),
					concurrencyRenewItemKeyOwners:  ks.ConcurrencyOwners(concTask(p.Task, p.Index), p.Group),
				}
				a := [concurrencyRenewItemArgCount]any{
					concurrencyRenewItemArgRunID: p.RunID,
					concurrencyRenewItemArgToken: p.Token,
					concurrencyRenewItemArgLease: p.Lease.Milliseconds(),
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.RenewParams, r []any) (bool, int, error) {
			if err, ok := r[0].(error); ok {
				return false, 1, s.named("concurrency_renew", scriptError(err))
			}
			return asInt(r[0]) == 1, 1, nil
		},
	}, ps)
}
