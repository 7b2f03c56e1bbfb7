package redisstore

import (
	"context"
	"fmt"
	"time"
)

// ratelimitDeferScript holds back runs a rate limit refused:
// lua/ratelimit_defer.lua.
var ratelimitDeferScript = loadScript("ratelimit_defer")

// Deferral is a delivery a rate limit refused, to be queued again at Due.
type Deferral struct {
	Delivery
	Due time.Time
	// Reason is why the run waits, shown as the run's Waiting until it is
	// queued again: `rate limit "emails" key "acme"`.
	Reason string
}

// DeferResult is the answer for one Deferral.
type DeferResult struct {
	// Held says the run waits in its partition's retry zset, still queued,
	// with no attempt begun; its delivery is acknowledged and deleted.
	Held bool
	// Reason says why it was not held back: "missing", "stale" or the
	// run's terminal status; the delivery is dropped then too.
	Reason string
}

// DeferRuns holds back each delivery's run until its Due time, in one call
// of the defer script per partition, all in one pipeline: promote.lua
// queues it again then (see Promote). The i-th result and error belong to
// the i-th deferral.
func (s *Store) DeferRuns(ctx context.Context, ds []Deferral) ([]DeferResult, []error) {
	res := make([]DeferResult, len(ds))
	errs := make([]error, len(ds))
	parts, err := s.Partitions(ctx)
	if err != nil {
		return res, fillErr(errs, err)
	}
	groups := groupByPartition(len(ds), parts.Count(), func(i int) (int, error) { return runPartition(parts, ds[i].RunID) }, errs)
	keepFirst(errs, s.evalBatch(ctx, ratelimitDeferScript, groups, len(ds), func(items []int) ([]string, []any) {
		ks := parts.keys[mustPartition(parts, ds[items[0]].RunID)]
		hk := [1 + ratelimitDeferKeyCount]string{ratelimitDeferKeyRetry: ks.Retry()}
		ha := [1 + ratelimitDeferArgCount]any{ratelimitDeferArgGroup: GroupName}
		keys := append(make([]string, 0, ratelimitDeferKeyCount+ratelimitDeferItemKeyCount*len(items)), hk[1:]...)
		args := append(make([]any, 0, ratelimitDeferArgCount+ratelimitDeferItemArgCount*len(items)), ha[1:]...)
		for _, i := range items {
			d := ds[i]
			k := [ratelimitDeferItemKeyCount]string{
				ratelimitDeferItemKeyRun:    ks.Run(d.RunID),
				ratelimitDeferItemKeyStream: ks.Stream(d.Task),
			}
			a := [ratelimitDeferItemArgCount]any{
				ratelimitDeferItemArgRunID:  d.RunID,
				ratelimitDeferItemArgEntry:  d.EntryID,
				ratelimitDeferItemArgDue:    unixMS(d.Due),
				ratelimitDeferItemArgReason: d.Reason,
			}
			keys, args = append(keys, k[:]...), append(args, a[:]...)
		}
		return keys, args
	}, func(i int, r []any) (int, error) {
		if len(r) < 2 {
			return len(r), fmt.Errorf("redisstore: ratelimit_defer: unexpected reply %v", r)
		}
		if err, ok := r[0].(error); ok {
			return 2, s.named("ratelimit_defer", scriptError(err))
		}
		res[i] = DeferResult{Held: asInt(r[0]) == 1, Reason: asString(r[1])}
		return 2, nil
	}))
	return res, errs
}
