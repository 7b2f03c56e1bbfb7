package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// recordSpec is a run record's spec (its fields h): runSpec, or for a
// record written before runSpec existed, one made from the fields it had
// then, as taskq_record_spec makes it.
func recordSpec(h map[string]string) string {
	if s, ok := h[runSpec]; ok {
		return s
	}
	n := func(k string) int64 { x, _ := strconv.ParseInt(h[k], 10, 64); return x }
	return settingsSpec(engine.Strategy(h[legacyRunStrategy]), n(legacyRunHold), int(n(legacyRunRetries)), n(legacyRunTimeout),
		n(legacyRunCreated), int(n(legacyRunMaxDeliveries)), n(legacyRunRetain), n(legacyRunRetention))
}

// recordPriority reads a record's priority field: absent for the default.
func recordPriority(v string) int {
	if p, err := strconv.Atoi(v); err == nil && p > engine.PriorityDefault {
		return p
	}
	return engine.PriorityDefault
}

func parseRun(id string, h map[string]string) *engine.Run {
	i := func(k string) int64 { n, _ := strconv.ParseInt(h[k], 10, 64); return n }
	strat, spec, _ := parseSpecValues(recordSpec(h))
	r := &engine.Run{
		ID: id, Task: h[runTask], Status: h[runStatus], Key: h[runIdempotencyKey], Strategy: strat,
		Hold:    time.Duration(spec[specHold]) * time.Millisecond,
		Retain:  time.Duration(spec[specRetain]) * time.Millisecond,
		Attempt: int(i(runAttempt)), Fails: int(i(runFails)), Waits: int(i(runWaits)), Retries: int(spec[specRetries]),
		Timeout: time.Duration(spec[specTimeout]) * time.Millisecond,
		Error:   h[runError], Consumer: h[runConsumer], RetryOf: h[runRetryOf], RetriedBy: h[runRetriedBy],
		Waiting: h[runWaiting], ConcurrencyGroup: h[runConcurrencyGroup], Priority: recordPriority(h[runPriority]),
		Created: fromMS(spec[specCreated]), Started: fromMS(i(runStarted)), Finished: fromMS(i(runFinished)),
	}
	if x := h[runFlags]; x != "" {
		r.HasAttempts, r.HasSignals, r.HasSteps = strings.Contains(x, "a"), strings.Contains(x, "s"), strings.Contains(x, "t")
		r.HasChildren = strings.Contains(x, "d")
	}
	r.Parent = engine.ParentOf(r.Key)
	if v, ok := h[runInput]; ok {
		r.Input = []byte(v)
	}
	if v, ok := h[runMeta]; ok && v != "" {
		r.Meta = []byte(v)
	} else {
		r.Meta = []byte(noMeta) // not written when there is none
	}
	if v, ok := h[runResult]; ok {
		r.Result = []byte(v)
	}
	return r
}

// GetRun reads a run record.
func (s *Store) GetRun(ctx context.Context, id string) (*engine.Run, error) {
	ks, err := s.keysOfRun(ctx, id)
	if err != nil {
		return nil, err
	}
	h, err := s.rdb.HGetAll(ctx, ks.Run(id)).Result()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s", engine.ErrRunNotFound, id)
	}
	return parseRun(id, h), nil
}

// RunStatus reads only a run's status.
func (s *Store) RunStatus(ctx context.Context, id string) (string, error) {
	ks, err := s.keysOfRun(ctx, id)
	if err != nil {
		return "", err
	}
	st, err := s.rdb.HGet(ctx, ks.Run(id), runStatus).Result()
	if errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("%w: %s", engine.ErrRunNotFound, id)
	}
	return st, err
}

// ListRunIDs returns up to limit run IDs, newest first, from the runs
// indexes of every partition, skipping the offset newest (PageRuns pages
// through them by position instead).
func (s *Store) ListRunIDs(ctx context.Context, offset, limit int64) ([]string, error) {
	indexes, err := s.indexes(ctx, Keys.Runs)
	if err != nil {
		return nil, err
	}
	return s.rangeIndexes(ctx, indexes, offset, limit)
}
