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
	head := [1 + concurrencyReleaseArgCount]any{concurrencyReleaseArgNow: unixMS(now)}
	return runBatch(ctx, s, batchOp[engine.ReleaseParams, engine.ReleaseResult]{
		script: concurrencyReleaseScript,
		part: func(parts *Partitions, p engine.ReleaseParams) (int, error) {
			return parts.ofGroup(concTask(p.Task, p.Index), p.Group), nil
		},
		call: func(ks Keys, items []engine.ReleaseParams) ([]string, []any) {
			return itemsCall(nil, head[1:], items, func(p engine.ReleaseParams, keys []string, args []any) ([]string, []any) {
				k := [concurrencyReleaseItemKeyCount]string{
					concurrencyReleaseItemKeyHolders: ks.ConcurrencyHolders(concTask(p.Task, p.Index), p.Group),
					concurrencyReleaseItemKeyOwners:  ks.ConcurrencyOwners(concTask(p.Task, p.Index), p.Group),
					concurrencyReleaseItemKeyWaiting: ks.ConcurrencyWaiting(concTask(p.Task, p.Index), p.Group),
				}
				a := [concurrencyReleaseItemArgCount]any{
					concurrencyReleaseItemArgRunID:   p.RunID,
					concurrencyReleaseItemArgToken:   p.Token,
					concurrencyReleaseItemArgMaxRuns: p.MaxRuns,
					concurrencyReleaseItemArgReserve: p.Reserve.Milliseconds(),
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.ReleaseParams, r []any) (engine.ReleaseResult, int, error) {
			bad := fmt.Errorf("redisstore: concurrency_release: unexpected reply %v", r)
			if len(r) < 2 {
				return engine.ReleaseResult{}, len(r), bad
			}
			if err, ok := r[0].(error); ok {
				return engine.ReleaseResult{}, 2, s.named("concurrency_release", scriptError(err))
			}
			k := int(asInt(r[1]))
			if len(r) < 2+k {
				return engine.ReleaseResult{}, len(r), bad
			}
			next := make([]string, k)
			for j := range next {
				next[j] = asString(r[2+j])
			}
			return engine.ReleaseResult{Released: asInt(r[0]) == 1, Next: next}, 2 + k, nil
		},
	}, ps)
}
