package redisstore

import (
	"context"

	"github.com/taskq/taskq/internal/engine"
)

// concurrencyUnparkScript puts parked runs back in their streams:
// lua/concurrency_unpark.lua.
var concurrencyUnparkScript = loadScript("concurrency_unpark")

// Unpark puts the parked runs of ps back in their streams, one script call
// per partition the runs are in (sent in one pipeline).
func (s *Store) Unpark(ctx context.Context, ps []engine.UnparkParams) ([]string, []error) {
	return runBatch(ctx, s, batchOp[engine.UnparkParams, string]{
		script: concurrencyUnparkScript,
		part:   func(parts *Partitions, p engine.UnparkParams) (int, error) { return runPartition(parts, p.RunID) },
		call: func(ks Keys, sub []engine.UnparkParams) ([]string, []any) {
			hk := [1 + concurrencyUnparkKeyCount]string{concurrencyUnparkKeyParked: ks.Parked()}
			return itemsCall(hk[1:], nil, sub, func(p engine.UnparkParams, keys []string, args []any) ([]string, []any) {
				k := [concurrencyUnparkItemKeyCount]string{
					concurrencyUnparkItemKeyRun:    ks.Run(p.RunID),
					concurrencyUnparkItemKeyStream: ks.Stream(p.Task),
				}
				a := [concurrencyUnparkItemArgCount]any{concurrencyUnparkItemArgRunID: p.RunID}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.UnparkParams, r []any) (string, int, error) {
			if err, ok := r[0].(error); ok {
				return "", 1, s.named("concurrency_unpark", scriptError(err))
			}
			return asString(r[0]), 1, nil
		},
	}, ps)
}
