package redisstore

import (
	"context"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// startScript begins attempts: lua/start.lua.
var startScript = loadScript("start")

// Start begins a new attempt of the delivered run. StartBatch does the
// same for many deliveries in one call.
func (s *Store) Start(ctx context.Context, p *engine.StartParams) (engine.StartResult, error) {
	res, errs := s.StartBatch(ctx, p.Consumer, p.Now, []engine.Delivery{{Task: p.Task, EntryID: p.EntryID, RunID: p.RunID}})
	return res[0], errs[0]
}

// StartBatch begins, for consumer at now, the attempts of deliveries it
// has just read (or reclaimed), in one call of the start script (or more,
// past MaxItemsPerCall). The i-th result and error belong to the i-th
// delivery and are what Start would have returned for it alone.
func (s *Store) StartBatch(ctx context.Context, consumer string, now time.Time, ds []engine.Delivery) ([]engine.StartResult, []error) {
	return runBatch(ctx, s, batchOp[engine.Delivery, engine.StartResult]{
		script: startScript,
		part:   func(parts *Partitions, d engine.Delivery) (int, error) { return runPartition(parts, d.RunID) },
		call: func(ks Keys, sub []engine.Delivery) ([]string, []any) {
			h := [1 + startArgCount]any{
				startArgGroup:    GroupName,
				startArgConsumer: consumer,
				startArgNow:      unixMS(now),
				startArgPrefix:   ks.Prefix(),
			}
			return itemsCall(make([]string, startKeyCount), h[1:], sub, func(d engine.Delivery, keys []string, args []any) ([]string, []any) {
				// Boxed constants, and ints up to 255, cost no allocation.
				var maxdel, redelivered any = "", ""
				if d.Spec != nil {
					maxdel = d.Spec.MaxDeliveries
				}
				if d.Redelivered {
					redelivered = "1"
				}
				k := [startItemKeyCount]string{
					startItemKeyRun:    ks.Run(d.RunID),
					startItemKeyStream: ks.Lane(d.Task, d.Priority),
				}
				a := [startItemArgCount]any{
					startItemArgRunID:         d.RunID,
					startItemArgEntry:         d.EntryID,
					startItemArgMaxDeliveries: maxdel,
					startItemArgRedelivered:   redelivered,
				}
				return append(keys, k[:]...), append(args, a[:]...)
			})
		},
		reply: func(d engine.Delivery, r []any) (engine.StartResult, int, error) {
			res, n, err := parseStart(r, d.Spec)
			return res, n, s.named("start", err)
		},
	}, ds)
}

// start.lua answers each delivery with startReplyValues values, and a
// started one without a spec with startRecordValues more (input, meta,
// key, the record's spec).
const (
	startReplyValues  = 3
	startRecordValues = 4
)

// parseStart reads the reply values of start.lua for one delivery with
// spec (nil when it had none, and a started reply carries the record's),
// and says how many values were the delivery's.
func parseStart(r []any, spec *engine.RunSpec) (engine.StartResult, int, error) {
	if len(r) < startReplyValues {
		return engine.StartResult{}, len(r), fmt.Errorf("redisstore: start: unexpected reply %v", r)
	}
	if err, ok := r[0].(error); ok {
		return engine.StartResult{}, startReplyValues, scriptError(err)
	}
	if asInt(r[0]) != 1 {
		return engine.StartResult{Reason: asString(r[1]), Error: asString(r[2])}, startReplyValues, nil
	}
	n := startReplyValues
	if spec == nil {
		n = startReplyValues + startRecordValues
		if len(r) < n {
			return engine.StartResult{}, len(r), fmt.Errorf("redisstore: start: unexpected reply %v", r)
		}
		spec = parseSpec(map[string]any{entryInput: asString(r[3]), entryMeta: asString(r[4]),
			entryIdempotencyKey: asString(r[5]), entrySpec: asString(r[6])})
		if spec == nil {
			return engine.StartResult{}, n, fmt.Errorf("redisstore: start: the record's spec %q is not one", asString(r[6]))
		}
		spec.Fails = int(asInt(r[2]))
	}
	return engine.StartResult{Started: true, Attempt: int(asInt(r[1])), Spec: spec}, n, nil
}
