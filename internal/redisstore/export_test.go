package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// The steps of a fan-out, one script each, for the direct tests of the
// scripts (see fanout.go).

// StoreEventStep runs store_event.lua for p.
func (s *Store) StoreEventStep(ctx context.Context, p *engine.PushEventParams) error {
	return s.storeEvent(ctx, s.planFanout(p), p.Key)
}

// TriggerEventStep runs trigger_event.lua once for every task of p that
// gets a trigger. It returns every task's outcome, and the first error of a
// task Redis refused.
func (s *Store) TriggerEventStep(ctx context.Context, p *engine.PushEventParams) ([]engine.EventRun, error) {
	j := s.planFanout(p)
	runs, refused := make([]engine.EventRun, len(j.f.Tasks)), make([]error, len(j.f.Tasks))
	var tasks []int
	for i, t := range j.f.Tasks {
		if t.Error == "" {
			tasks = append(tasks, i)
		}
	}
	if err := s.triggerEvent(ctx, j, s.keys.Prefix(), tasks, runs, refused); err != nil {
		return nil, err
	}
	return runs, errors.Join(refused...)
}

// RecordEventStep runs record_event.lua for p with the outcomes runs.
func (s *Store) RecordEventStep(ctx context.Context, p *engine.PushEventParams, runs []engine.EventRun) ([]engine.EventRun, error) {
	return s.recordEvent(ctx, s.planFanout(p), runs)
}

// TakeFanoutsStep runs take_fanouts.lua and returns the IDs of the events
// whose fan-outs it took.
func (s *Store) TakeFanoutsStep(ctx context.Context, cutoff, now time.Time, limit int) ([]string, error) {
	jobs, err := s.takeFanouts(ctx, s.keys.Prefix(), cutoff, now, limit)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	return ids, err
}

// TakeCascadesStep runs take_cascades.lua on every partition and returns
// the IDs of the runs whose cascades it took.
func (s *Store) TakeCascadesStep(ctx context.Context, cutoff, now time.Time, limit int) ([]string, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	jobs, err := s.takeCascades(ctx, parts, cutoff, now, limit)
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.runID
	}
	return ids, err
}

// SendScriptsWithEvalSha makes s send its scripts with EVALSHA, as it does
// on a server without functions (see functions.go).
func (s *Store) SendScriptsWithEvalSha() { s.noFunctions.Store(true) }

// StatsKeys are partition i's statistics hashes of the minute and the
// coarse span holding now.
func (p *Partitions) StatsKeys(i int, now time.Time) (minute, coarse string) {
	k := p.Keys(i)
	return k.statsMinute(now.UnixMilli() / statsMinuteMs), k.statsCoarse(now.UnixMilli() / statsCoarseMs)
}
