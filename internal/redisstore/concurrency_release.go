package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// concurrencyReleaseScript gives slots back: lua/concurrency_release.lua.
var concurrencyReleaseScript = loadScript("concurrency_release")

// ReleaseSlots gives the slots of ps back at now, one script call per
// partition the groups are in (sent in one pipeline).
func (s *Store) ReleaseSlots(ctx context.Context, now time.Time, ps []engine.ReleaseParams) ([]engine.ReleaseResult, []error) {
	res := make([]engine.ReleaseResult, len(ps))
	head := [1 + concurrencyReleaseArgCount]any{concurrencyReleaseArgNow: unixMS(now)}
	errs := s.evalGroups(ctx, concurrencyReleaseScript, head[1:], len(ps), concurrencyReleaseItemKeyCount, concurrencyReleaseItemArgCount,
		func(i int) (string, string) { return ps[i].Task, ps[i].Group },
		func(i int, ks Keys, keys []string, args []any) ([]string, []any) {
			p := ps[i]
			k := [concurrencyReleaseItemKeyCount]string{
				concurrencyReleaseItemKeyHolders: ks.ConcurrencyHolders(p.Task, p.Group),
				concurrencyReleaseItemKeyOwners:  ks.ConcurrencyOwners(p.Task, p.Group),
				concurrencyReleaseItemKeyWaiting: ks.ConcurrencyWaiting(p.Task, p.Group),
			}
			a := [concurrencyReleaseItemArgCount]any{
				concurrencyReleaseItemArgRunID:   p.RunID,
				concurrencyReleaseItemArgToken:   p.Token,
				concurrencyReleaseItemArgMaxRuns: p.MaxRuns,
				concurrencyReleaseItemArgReserve: p.Reserve.Milliseconds(),
			}
			return append(keys, k[:]...), append(args, a[:]...)
		}, func(i int, r []any) (int, error) {
			if len(r) < 2 {
				return len(r), fmt.Errorf("redisstore: concurrency_release: unexpected reply %v", r)
			}
			if err, ok := r[0].(error); ok {
				return 2, s.named("concurrency_release", scriptError(err))
			}
			k := int(asInt(r[1]))
			if len(r) < 2+k {
				return len(r), fmt.Errorf("redisstore: concurrency_release: unexpected reply %v", r)
			}
			next := make([]string, k)
			for j := range next {
				next[j] = asString(r[2+j])
			}
			res[i] = engine.ReleaseResult{Released: asInt(r[0]) == 1, Next: next}
			return 2 + k, nil
		})
	return res, errs
}
