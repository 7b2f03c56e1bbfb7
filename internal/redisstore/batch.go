package redisstore

import (
	"context"
	"fmt"
	"time"
)

// StartBatch begins the attempts of many deliveries in one round trip: the
// start script once per delivery, pipelined, in order. The i-th result and
// error belong to the i-th delivery and are what Start would have returned
// for it alone.
func (s *Store) StartBatch(ctx context.Context, ps []*StartParams) ([]StartResult, []error) {
	res := make([]StartResult, len(ps))
	errs := make([]error, len(ps))
	cmds := s.evalPipeline(ctx, s.scripts.start, len(ps), func(i int) ([]string, []any) { return s.startArgs(ps[i]) })
	for i, c := range cmds {
		v, err := c.Result()
		if err != nil {
			errs[i] = scriptError(err)
			continue
		}
		res[i], errs[i] = parseStart(v)
	}
	return res, errs
}

func (s *Store) startArgs(p *StartParams) ([]string, []any) {
	return []string{s.keys.Run(p.RunID), s.keys.Stream(p.Task)},
		[]any{p.RunID, p.EntryID, GroupName, p.Consumer, unixMS(p.Now), s.keys.Prefix()}
}

// parseStart reads a reply of start.lua, as Start does.
func parseStart(v any) (StartResult, error) {
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
