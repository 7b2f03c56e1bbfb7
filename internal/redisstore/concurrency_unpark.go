package redisstore

import "context"

// concurrencyUnparkScript puts parked runs back in their streams:
// lua/concurrency_unpark.lua.
var concurrencyUnparkScript = loadScript("concurrency_unpark")

// UnparkParams name a parked run to put back in its task's stream.
type UnparkParams struct {
	RunID, Task string
}

// The results of Unpark besides the run's terminal status.
const (
	UnparkQueued    = "queued"     // back in its stream
	UnparkNotParked = "not parked" // left alone
	UnparkMissing   = "missing"    // no record
)

// Unpark puts the parked runs of ps back in their streams, one script call
// per partition the runs are in (sent in one pipeline).
func (s *Store) Unpark(ctx context.Context, ps []UnparkParams) ([]string, []error) {
	res := make([]string, len(ps))
	errs := make([]error, len(ps))
	if len(ps) == 0 {
		return res, errs
	}
	parts, err := s.Partitions(ctx)
	if err != nil {
		return res, fillErr(errs, err)
	}
	groups := groupByPartition(len(ps), parts.Count(), func(i int) (int, error) { return runPartition(parts, ps[i].RunID) }, errs)
	keepFirst(errs, s.evalBatch(ctx, concurrencyUnparkScript, groups, len(ps), func(items []int) ([]string, []any) {
		ks := parts.keys[mustPartition(parts, ps[items[0]].RunID)]
		hk := [1 + concurrencyUnparkKeyCount]string{concurrencyUnparkKeyParked: ks.Parked()}
		keys := append(make([]string, 0, concurrencyUnparkKeyCount+concurrencyUnparkItemKeyCount*len(items)), hk[1:]...)
		args := make([]any, 0, concurrencyUnparkArgCount+concurrencyUnparkItemArgCount*len(items))
		for _, i := range items {
			p := ps[i]
			k := [concurrencyUnparkItemKeyCount]string{
				concurrencyUnparkItemKeyRun:    ks.Run(p.RunID),
				concurrencyUnparkItemKeyStream: ks.Stream(p.Task),
			}
			a := [concurrencyUnparkItemArgCount]any{concurrencyUnparkItemArgRunID: p.RunID}
			keys, args = append(keys, k[:]...), append(args, a[:]...)
		}
		return keys, args
	}, func(i int, r []any) (int, error) {
		if err, ok := r[0].(error); ok {
			return 1, s.named("concurrency_unpark", scriptError(err))
		}
		res[i] = asString(r[0])
		return 1, nil
	}))
	return res, errs
}
