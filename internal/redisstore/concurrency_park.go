package redisstore

import (
	"context"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// concurrencyParkScript holds deliveries back: lua/concurrency_park.lua.
var concurrencyParkScript = loadScript("concurrency_park")

// Park holds back the deliveries of ps, one script call per partition the
// runs are in (sent in one pipeline). A recoverer looks at them first at
// recheck.
func (s *Store) Park(ctx context.Context, recheck time.Time, ps []engine.ParkParams) ([]string, []error) {
	return runBatch(ctx, s, batchOp[engine.ParkParams, string]{
		script: concurrencyParkScript,
		part:   func(parts *Partitions, p engine.ParkParams) (int, error) { return runPartition(parts, p.RunID) },
		call: func(ks Keys, sub []engine.ParkParams) ([]string, []any) {
			hk := [1 + concurrencyParkKeyCount]string{concurrencyParkKeyParked: ks.Parked()}
			h := [1 + concurrencyParkArgCount]any{concurrencyParkArgGroup: GroupName, concurrencyParkArgRecheck: unixMS(recheck)}
			return itemsCall(hk[1:], h[1:], sub, func(p engine.ParkParams, keys []string, args []any) ([]string, []any) {
				k := [concurrencyParkItemKeyCount]string{
					concurrencyParkItemKeyRun:    ks.Run(p.RunID),
					concurrencyParkItemKeyStream: ks.Lane(p.Task, p.Priority),
				}
				a := [concurrencyParkItemArgCount]any{
					concurrencyParkItemArgRunID:     p.RunID,
					concurrencyParkItemArgEntry:     p.EntryID,
					concurrencyParkItemArgReason:    p.Reason,
					concurrencyParkItemArgGroupName: p.Group,
					concurrencyParkItemArgLimit:     p.Index,
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(_ engine.ParkParams, r []any) (string, int, error) {
			if err, ok := r[0].(error); ok {
				return "", 1, s.named("concurrency_park", scriptError(err))
			}
			return asString(r[0]), 1, nil
		},
	}, ps)
}
