package redisstore

import (
	"context"
	"fmt"
	"time"
)

// StartBatch begins, for consumer at now, the attempts of deliveries it
// has just read (or reclaimed), in one call of the start script (or more,
// past MaxItemsPerCall). The i-th result and error belong to the i-th
// delivery and are what Start would have returned for it alone.
func (s *Store) StartBatch(ctx context.Context, consumer string, now time.Time, ds []Delivery) ([]StartResult, []error) {
	res := make([]StartResult, len(ds))
	errs := s.evalBatch(ctx, s.scripts.start, len(ds), func(lo, hi int) ([]string, []any) {
		keys := make([]string, 0, 2*(hi-lo))
		args := make([]any, 0, 4+2*(hi-lo))
		args = append(args, GroupName, consumer, unixMS(now), s.keys.Prefix())
		for _, d := range ds[lo:hi] {
			keys = append(keys, s.keys.Run(d.RunID), s.keys.Stream(d.Task))
			args = append(args, d.RunID, d.EntryID)
		}
		return keys, args
	}, func(i int, v any) (err error) {
		res[i], err = parseStart(v)
		return err
	})
	return res, errs
}

// parseStart reads one reply of start.lua.
func parseStart(v any) (StartResult, error) {
	if err, ok := v.(error); ok {
		return StartResult{}, scriptError(err)
	}
	r, err := asSlice(v)
	if err != nil || len(r) < 2 {
		return StartResult{}, fmt.Errorf("start: unexpected reply %v", v)
	}
	if asInt(r[0]) != 1 {
		return StartResult{Reason: asString(r[1])}, nil
	}
	if len(r) < 9 {
		return StartResult{}, fmt.Errorf("start: unexpected reply %v", v)
	}
	return StartResult{
		Started: true, Attempt: int(asInt(r[1])), Fails: int(asInt(r[2])),
		Input: []byte(asString(r[3])), Meta: []byte(asString(r[4])), Key: asString(r[5]),
		Retries: int(asInt(r[6])), Timeout: time.Duration(asInt(r[7])) * time.Millisecond,
		Created: fromMS(asInt(r[8])),
	}, nil
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
		args := make([]any, 0, 2+6*(hi-lo))
		args = append(args, GroupName, s.keys.Prefix())
		for _, p := range ps[lo:hi] {
			keys = append(keys, s.keys.Run(p.RunID))
			args = append(args, p.RunID, p.Attempt, string(p.Outcome), p.Payload, unixMS(p.Now), unixMS(p.RetryAt))
		}
		return keys, args
	}, func(i int, v any) (err error) {
		res[i], err = parseWritten("finish", v)
		return err
	})
	return res, errs
}
