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
	res := make([]bool, len(ps))
	head := [1 + concurrencyRenewArgCount]any{concurrencyRenewArgNow: unixMS(now)}
	errs := s.evalGroups(ctx, concurrencyRenewScript, head[1:], len(ps), concurrencyRenewItemKeyCount, concurrencyRenewItemArgCount,
		func(i int) (string, string) { return ps[i].Task, ps[i].Group },
		func(i int, ks Keys, keys []string, args []any) ([]string, []any) {
			p := ps[i]
			k := [concurrencyRenewItemKeyCount]string{
				concurrencyRenewItemKeyHolders: ks.ConcurrencyHolders(p.Task, p.Group),
				concurrencyRenewItemKeyOwners:  ks.ConcurrencyOwners(p.Task, p.Group),
			}
			a := [concurrencyRenewItemArgCount]any{
				concurrencyRenewItemArgRunID: p.RunID,
				concurrencyRenewItemArgToken: p.Token,
				concurrencyRenewItemArgLease: p.Lease.Milliseconds(),
			}
			return append(keys, k[:]...), append(args, a[:]...)
		}, func(i int, r []any) (int, error) {
			if err, ok := r[0].(error); ok {
				return 1, s.named("concurrency_renew", scriptError(err))
			}
			res[i] = asInt(r[0]) == 1
			return 1, nil
		})
	return res, errs
}
