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
	res := make([]engine.AcquireResult, len(ps))
	head := [1 + concurrencyAcquireArgCount]any{concurrencyAcquireArgNow: unixMS(now)}
	errs := s.evalGroups(ctx, concurrencyAcquireScript, head[1:], len(ps), concurrencyAcquireItemKeyCount, concurrencyAcquireItemArgCount,
		func(i int) (string, string) { return ps[i].Task, ps[i].Group },
		func(i int, ks Keys, keys []string, args []any) ([]string, []any) {
			p := ps[i]
			k := [concurrencyAcquireItemKeyCount]string{
				concurrencyAcquireItemKeyHolders: ks.ConcurrencyHolders(p.Task, p.Group),
				concurrencyAcquireItemKeyOwners:  ks.ConcurrencyOwners(p.Task, p.Group),
				concurrencyAcquireItemKeyWaiting: ks.ConcurrencyWaiting(p.Task, p.Group),
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
		}, func(i int, r []any) (int, error) {
			if len(r) < 3 {
				return len(r), fmt.Errorf("redisstore: concurrency_acquire: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return 3, s.named("concurrency_acquire", scriptError(err))
			}
			res[i] = engine.AcquireResult{Outcome: engine.AcquireOutcome(asString(r[0])), Holders: int(asInt(r[1])), Evicted: asString(r[2])}
			return 3, nil
		})
	return res, errs
}
