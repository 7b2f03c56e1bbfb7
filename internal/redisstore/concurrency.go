package redisstore

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Concurrency groups: at most MaxRuns runs of a group hold a slot at once,
// across every worker. A group's state lives in one partition, the one
// ConcurrencyPartition names, and is changed there by one script each:
// concurrency_acquire.lua (a delivery asks for a slot), concurrency_renew.lua
// (the worker's heartbeats), concurrency_release.lua (a run's attempt
// ended: the slot goes to the first run in the waiting line). A run whose
// group is full waits out of its stream, in its own partition
// (concurrency_park.lua), until it is given a slot (concurrency_unpark.lua)
// or a recoverer finds it forgotten (take_parked.lua, ParkedStates).

// ConcurrencyPartition is the partition of namespace ns, of n, that holds
// the state of task's concurrency group group: FNV-1a (32 bits) of
// "<ns>\x00<task>\x00<group>", modulo n.
func ConcurrencyPartition(ns, task, group string, n int) int {
	if n <= 1 {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(task))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(group))
	return int(h.Sum32() % uint32(n))
}

// ConcurrencyHolders is the zset of the runs holding a slot of task's group
// group, by lease deadline (ms).
func (k Keys) ConcurrencyHolders(task, group string) string {
	return k.prefix + keyConcurrencyHolders + task + "|" + group
}

// ConcurrencyOwners is the hash of what each holder of a slot of task's
// group group is.
func (k Keys) ConcurrencyOwners(task, group string) string {
	return k.prefix + keyConcurrencyOwners + task + "|" + group
}

// ConcurrencyWaiting is the zset of the runs waiting for a slot of task's
// group group, by creation time (ms).
func (k Keys) ConcurrencyWaiting(task, group string) string {
	return k.prefix + keyConcurrencyWaiting + task + "|" + group
}

// Parked is the partition's index of parked runs.
func (k Keys) Parked() string { return k.prefix + keyParked }

// ConcurrencyKeys returns the key builder of the partition holding task's
// group group.
func (s *Store) ConcurrencyKeys(ctx context.Context, task, group string) (Keys, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return Keys{}, err
	}
	return parts.keys[ConcurrencyPartition(parts.ns, task, group, parts.Count())], nil
}

// concTask names the groups of task's index-th concurrency limit in their
// keys and partition: the task's name for the first, "<task>#<index>" for
// the others (a task's name has no '#', nor a '|', which ends it in a key),
// so that the groups of two limits are apart even where their names are
// the same.
func concTask(task string, index int) string {
	if index == 0 {
		return task
	}
	return task + "#" + strconv.Itoa(index)
}

// ofGroup is the partition of task's concurrency group group.
func (p *Partitions) ofGroup(task, group string) int {
	return ConcurrencyPartition(p.ns, task, group, p.Count())
}

// ParkedStates reads, for each parked run, whether its group holds a slot
// for it or has it in its waiting line: a run that is neither was
// forgotten (its reservation lapsed, or its worker died between the two
// steps of a release) and is put back in its stream (Unpark). It reads
// only; one pipeline.
func (s *Store) ParkedStates(ctx context.Context, now time.Time, runs []engine.ParkedRun) ([]engine.ParkedState, error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]engine.ParkedState, len(runs))
	if len(runs) == 0 {
		return out, nil
	}
	type pair struct{ h, w *redis.FloatCmd }
	cmds := make([]pair, len(runs))
	_, err = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range runs {
			ks := parts.Keys(parts.ofGroup(concTask(r.Task, r.Index), r.Group))
			cmds[i] = pair{p.ZScore(ctx, ks.ConcurrencyHolders(concTask(r.Task, r.Index), r.Group), r.RunID), p.ZScore(ctx, ks.ConcurrencyWaiting(concTask(r.Task, r.Index), r.Group), r.RunID)}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("redisstore: read concurrency groups: %w", err)
	}
	for i, c := range cmds {
		if v, err := c.h.Result(); err == nil && int64(v) >= unixMS(now) {
			out[i].Holding = true
		}
		if _, err := c.w.Result(); err == nil {
			out[i].Waiting = true
		}
	}
	return out, nil
}
