package redisstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// What a run did besides its record: its attempt history, its signals and
// its durable steps, each in the run's partition (one slot), read for the
// Inspector. Nothing here is written: the scripts write them (finish.lua
// and start.lua the attempt history, signal.lua the signals, save_step.lua
// the steps).

// ReadParts reads the parts run r has (its flags say which): the attempt
// history and the counts of its signals and durable steps, in one round
// trip to the run's partition; none at all for a run that has none.
func (s *Store) ReadParts(ctx context.Context, r *engine.Run) (engine.Parts, error) {
	var out engine.Parts
	if !r.HasAttempts && !r.HasSignals && !r.HasSteps {
		return out, nil
	}
	ks, err := s.keysOfRun(ctx, r.ID)
	if err != nil {
		return out, err
	}
	var (
		attempts *redis.XMessageSliceCmd
		signals  *redis.IntCmd
		steps    *redis.IntCmd
	)
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if r.HasAttempts {
			attempts = p.XRange(ctx, ks.Attempts(r.ID), "-", "+")
		}
		if r.HasSignals {
			signals = p.XLen(ctx, ks.Signals(r.ID))
		}
		if r.HasSteps {
			steps = p.HLen(ctx, ks.Steps(r.ID))
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	if attempts != nil {
		for _, m := range attempts.Val() {
			out.Attempts = append(out.Attempts, attemptOf(m.Values))
		}
	}
	if signals != nil {
		out.Signals = signals.Val()
	}
	if steps != nil {
		out.Steps = steps.Val()
	}
	return out, nil
}

func attemptOf(v map[string]any) engine.Attempt {
	str := func(k string) string { s, _ := v[k].(string); return s }
	num := func(k string) int64 { n, _ := strconv.ParseInt(str(k), 10, 64); return n }
	return engine.Attempt{Number: int(num(attemptEntryNumber)), Outcome: str(attemptEntryOutcome),
		Began: fromMS(num(attemptEntryBegan)), Ended: fromMS(num(attemptEntryEnded)),
		Consumer: str(attemptEntryConsumer), Error: str(attemptEntryError)}
}

// ReadAttempts returns a run's attempt history, oldest first: its latest
// MaxAttemptRecords attempts that failed, were retried or lapsed (none for
// a run that does not exist).
func (s *Store) ReadAttempts(ctx context.Context, runID string) ([]engine.Attempt, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ms, err := s.rdb.XRange(ctx, ks.Attempts(runID), "-", "+").Result()
	if err != nil {
		return nil, err
	}
	out := make([]engine.Attempt, 0, len(ms))
	for _, m := range ms {
		out = append(out, attemptOf(m.Values))
	}
	return out, nil
}

// ScanSteps returns a page of a run's durable steps, by name within the
// page, from cursor (0 for the first page), and the cursor of the next
// page (0 when there is none). A page holds about count steps (HSCAN's
// COUNT: a small steps hash comes whole, as Redis stores it compactly), and
// as with any HSCAN, a step stored while the pages are walked may be left
// out and one may come twice if the hash grew meanwhile.
func (s *Store) ScanSteps(ctx context.Context, runID string, cursor uint64, count int) ([]engine.Step, uint64, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if errors.Is(err, engine.ErrRunNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	kv, next, err := s.rdb.HScan(ctx, ks.Steps(runID), cursor, "", int64(count)).Result()
	if err != nil {
		return nil, 0, err
	}
	if len(kv)%2 != 0 {
		return nil, 0, fmt.Errorf("redisstore: steps of run %s: odd HSCAN reply", runID)
	}
	out := make([]engine.Step, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		out = append(out, engine.Step{Name: kv[i], Result: []byte(kv[i+1])})
	}
	slices.SortFunc(out, func(a, b engine.Step) int { return strings.Compare(a.Name, b.Name) })
	return out, next, nil
}
