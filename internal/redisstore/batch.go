package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// MaxLingeringEntries bounds the acknowledged entries a task stream keeps
// behind an older delivery still pending (a long-running handler): past
// it, finishing runs deletes their entries at once instead of leaving them
// to be trimmed (TASKQ_MAX_LINGERING in lib.lua).
const MaxLingeringEntries = 10000

// Arguments per item of the start and finish scripts, after their headers
// (see start.lua and finish.lua).
const (
	StartArgsPerItem  = 4
	FinishArgsPerItem = 14
)

// StartBatch begins, for consumer at now, the attempts of deliveries it
// has just read (or reclaimed), in one call of the start script (or more,
// past MaxItemsPerCall). The i-th result and error belong to the i-th
// delivery and are what Start would have returned for it alone.
func (s *Store) StartBatch(ctx context.Context, consumer string, now time.Time, ds []Delivery) ([]StartResult, []error) {
	res := make([]StartResult, len(ds))
	errs := s.evalBatch(ctx, s.scripts.start, len(ds), func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 2*(hi-lo))
		args := make([]any, 0, 4+StartArgsPerItem*(hi-lo))
		args = append(args, GroupName, consumer, unixMS(now), s.keys.Prefix())
		for _, d := range ds[lo:hi] {
			keys = append(keys, s.keys.Run(d.RunID), s.keys.Stream(d.Task))
			maxdel := ""
			if d.Spec != nil {
				maxdel = strconv.Itoa(d.Spec.MaxDeliveries)
			}
			redelivered := ""
			if d.Redelivered {
				redelivered = "1"
			}
			args = append(args, d.RunID, d.EntryID, maxdel, redelivered)
		}
		return keys, args
	}, func(i int, r []any) (n int, err error) {
		res[i], n, err = parseStart(r, ds[i].Spec)
		return n, s.named("start", err)
	})
	return res, errs
}

// parseStart reads the reply values of start.lua for one delivery with
// spec (nil when it had none, and a started reply carries the record's),
// and says how many values were the delivery's.
func parseStart(r []any, spec *RunSpec) (StartResult, int, error) {
	if len(r) < 3 {
		return StartResult{}, len(r), fmt.Errorf("start: unexpected reply %v", r)
	}
	if err, ok := r[0].(error); ok {
		return StartResult{}, 3, scriptError(err)
	}
	if asInt(r[0]) != 1 {
		return StartResult{Reason: asString(r[1]), Error: asString(r[2])}, 3, nil
	}
	n := 3
	if spec == nil {
		n = 13
		if len(r) < n {
			return StartResult{}, len(r), fmt.Errorf("start: unexpected reply %v", r)
		}
		spec = &RunSpec{
			Input: []byte(asString(r[3])), Meta: []byte(asString(r[4])), Key: asString(r[5]),
			Strategy: Strategy(asString(r[6])), Retries: int(asInt(r[7])),
			Timeout: time.Duration(asInt(r[8])) * time.Millisecond, Created: fromMS(asInt(r[9])),
			MaxDeliveries: int(asInt(r[10])), Retain: time.Duration(asInt(r[11])) * time.Millisecond,
			Retention: time.Duration(asInt(r[12])) * time.Millisecond, Fails: int(asInt(r[2])),
		}
	}
	return StartResult{Started: true, Attempt: int(asInt(r[1])), Spec: spec}, n, nil
}

// FinishBatch records many outcomes in one call of the finish script (or
// more, past MaxItemsPerCall). The i-th result and error belong to the i-th
// outcome.
func (s *Store) FinishBatch(ctx context.Context, ps []*FinishParams) ([]FinishResult, []error) {
	if len(ps) == 0 {
		return nil, nil
	}
	res := make([]FinishResult, len(ps))
	errs := s.evalBatch(ctx, s.scripts.finish, len(ps), func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 1+hi-lo)
		keys = append(keys, s.keys.Retry())
		args := make([]any, 0, 2+FinishArgsPerItem*(hi-lo))
		args = append(args, GroupName, s.keys.Prefix())
		for _, p := range ps[lo:hi] {
			keys = append(keys, s.keys.Run(p.RunID))
			args = append(args, p.RunID, p.Attempt, string(p.Outcome), p.Payload, unixMS(p.Now), unixMS(p.RetryAt))
			if sp := p.Spec; sp != nil && p.Task != "" && p.EntryID != "" {
				args = append(args, p.Task, p.EntryID, string(sp.Strategy), sp.Key, ms(sp.Retain), ms(sp.Retention))
				if !p.Began.IsZero() {
					args = append(args, unixMS(p.Began), p.Consumer)
				} else {
					args = append(args, "", "")
				}
			} else {
				args = append(args, "", "", "", "", 0, 0, "", "")
			}
		}
		return keys, args
	}, func(i int, r []any) (int, error) {
		var err error
		res[i], err = s.parseWrittenValues("finish", r)
		return 2, err
	})
	return res, errs
}
