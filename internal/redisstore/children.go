package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
)

// A run's children (engine.Child) live in a hash in the run's partition,
// children:<run id>, one record per name, written by record_children.lua
// and expiring with the run's record (flag d). The children themselves
// live in the partitions of their keys, which a script on the parent's
// slot cannot reach: so no script touches a parent and its child.
//
//   - Spawning: the parent records each child, with the run ID chosen for
//     it, before the child is created (a parent that has ended records
//     nothing); then the children are triggered with those IDs; then their
//     records are marked created. A parent replayed gets the records kept
//     (the first of a name wins), triggers the children not marked yet
//     (a child created before answers engine.ErrRunExists: its ID is
//     taken), and never makes a second child under a name.
//   - Cancelling: cancelling a run with children (any way: cancel.lua, a
//     supersede, a concurrency group) adds it to its partition's cascades
//     in the same script (taskq_terminate). CancelChildren reads the
//     run's children and cancels each that is not detached, in its own
//     partition, then theirs, and takes the run off the cascades once no
//     child is left to look for. A canceller that dies midway leaves the
//     entry: RecoverCascades, run by every worker's janitor, takes it
//     over after engine.CascadeGrace and does the rest. Cancelling a child
//     that has ended changes nothing, so doing it twice is harmless.

// maxCascadeDepth bounds the generations one CancelChildren goes down;
// the cascades of the generations below stay pending for RecoverCascades.
const maxCascadeDepth = 32

// ReadChildren reads every child parent recorded.
func (s *Store) ReadChildren(ctx context.Context, parent string) ([]engine.Child, error) {
	all, err := s.readChildrenOf(ctx, []string{parent})
	if err != nil {
		return nil, err
	}
	return all[0], nil
}

// readChildrenOf reads the children of each parent, in one pipeline; a
// parent whose ID names no partition has none.
func (s *Store) readChildrenOf(ctx context.Context, parents []string) ([][]engine.Child, error) {
	out := make([][]engine.Child, len(parents))
	keys := make([]string, len(parents))
	for i, id := range parents {
		ks, err := s.keysOfRun(ctx, id)
		switch {
		case errors.Is(err, engine.ErrRunNotFound):
			continue
		case err != nil:
			return nil, err
		}
		keys[i] = ks.Children(id)
	}
	cmds := make([]*redis.MapStringStringCmd, len(parents))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			if k != "" {
				cmds[i] = p.HGetAll(ctx, k)
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		h, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		for name, v := range h {
			c, err := decodeChild(name, v)
			if err != nil {
				return nil, err
			}
			out[i] = append(out[i], c)
		}
		engine.SortChildren(out[i])
	}
	return out, nil
}

// CancelChildren cancels the children of parent that are not detached,
// generation by generation: one pipeline reads the children of a
// generation, one cancels them. A child cancelled here that has children
// of its own (it joined its partition's cascades as it was cancelled) is
// the next generation's parent.
func (s *Store) CancelChildren(ctx context.Context, parent string, now time.Time) (engine.CascadeResult, error) {
	return s.cancelChildren(ctx, parent, now, false)
}

// cancelChildren is CancelChildren; with leave, parent leaves the
// cascades even when it recorded no child (a recoverer took it).
func (s *Store) cancelChildren(ctx context.Context, parent string, now time.Time, leave bool) (engine.CascadeResult, error) {
	var res engine.CascadeResult
	var errs []error
	level := []string{parent}
	for depth := 0; len(level) > 0 && depth < maxCascadeDepth; depth++ {
		kids, err := s.readChildrenOf(ctx, level)
		if err != nil {
			return res, errors.Join(append(errs, err)...)
		}
		type target struct {
			parent int
			child  engine.Child
		}
		var ts []target
		var calls []scriptCall
		pending := make([]bool, len(level))
		for i, cs := range kids {
			for _, c := range cs {
				if c.Detached {
					continue
				}
				call, err := s.cancelCall(ctx, c.RunID, "parent run "+level[i]+" was cancelled", now)
				if errors.Is(err, engine.ErrRunNotFound) {
					continue // an ID of no partition: never a child's
				}
				if err != nil {
					errs, pending[i] = append(errs, err), true
					continue
				}
				ts, calls = append(ts, target{i, c}), append(calls, call)
			}
		}
		s.runScripts(ctx, cancelScript, calls)
		var next []string
		for j, t := range ts {
			r, err := s.parseWritten("cancel", calls[j].Reply)
			if calls[j].Err != nil {
				err = calls[j].Err
			}
			switch {
			case err != nil:
				errs, pending[t.parent] = append(errs, err), true
			case r.Written:
				res.Cancelled++
				next = append(next, t.child.RunID)
			case r.Status == "missing" && !t.child.Created:
				// Recorded before the cancel, its spawn maybe on its way.
				res.Pending++
				pending[t.parent] = true
			}
		}
		var done []string
		for i, id := range level {
			if !pending[i] && (len(kids[i]) > 0 || (leave && depth == 0)) {
				done = append(done, id)
			}
		}
		if err := s.leaveCascades(ctx, done); err != nil {
			errs = append(errs, err)
		}
		level = next
	}
	return res, errors.Join(errs...)
}

// cancelCall is the call of cancel.lua that cancels runID.
func (s *Store) cancelCall(ctx context.Context, runID, reason string, now time.Time) (scriptCall, error) {
	ks, err := s.keysOfRun(ctx, runID)
	if err != nil {
		return scriptCall{}, err
	}
	k := [1 + cancelKeyCount]string{cancelKeyRun: ks.Run(runID)}
	a := [1 + cancelArgCount]any{
		cancelArgRunID:  runID,
		cancelArgNow:    unixMS(now),
		cancelArgReason: reason,
		cancelArgGroup:  GroupName,
		cancelArgPrefix: ks.Prefix(),
		cancelArgNotice: "",
	}
	return scriptCall{Keys: k[1:], Args: a[1:]}, nil
}

// leaveCascades takes runs off their partitions' cascades, in one
// pipeline.
func (s *Store) leaveCascades(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			ks, err := s.keysOfRun(ctx, id)
			if err != nil {
				continue
			}
			p.ZRem(ctx, ks.Cascades(), id)
		}
		return nil
	})
	return err
}

// RecoverCascades finishes the cascades left pending for grace in every
// partition, up to limit per partition.
func (s *Store) RecoverCascades(ctx context.Context, now time.Time, grace time.Duration, limit int) (taken, done int, err error) {
	parts, err := s.Partitions(ctx)
	if err != nil {
		return 0, 0, err
	}
	jobs, err := s.takeCascades(ctx, parts, now.Add(-grace), now, limit)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, j := range jobs {
		r, err := s.cancelChildren(ctx, j.runID, now, true)
		switch {
		case err != nil:
			errs = append(errs, err)
		case r.Pending == 0:
			done++
		case !j.ended.IsZero() && now.Sub(j.ended) > engine.SpawnGrace:
			// A child recorded but never created: its spawn died.
			if err := s.leaveCascades(ctx, []string{j.runID}); err != nil {
				errs = append(errs, err)
				continue
			}
			done++
		}
	}
	return len(jobs), done, errors.Join(errs...)
}
