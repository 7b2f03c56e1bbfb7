package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Worker presence. Each worker writes its record (Keys.Worker) every
// heartbeat interval, with a TTL of WorkerDeadAfterBeats intervals plus how
// long a dead worker stays listed; the index (Keys.Workers) scores each
// name by when its record expires, so the names of expired records are
// trimmed by score alone. Plain commands in MULTI: both keys share the
// namespace's hash tag.
//
// The runs a worker holds are not written here: a lease is the delivery's
// entry in the pending list of its task's consumer group (see
// heartbeat.lua), so ListWorkers reads them from there, with how long
// each lease has gone without renewal.

// Field names of a worker record.
const (
	wfName        = "name"
	wfHost        = "host"
	wfPID         = "pid"
	wfVersion     = "version"
	wfTasks       = "tasks"
	wfConcurrency = "concurrency"
	wfStarted     = "started"
	wfInterval    = "interval"
	wfLease       = "lease"
	wfBeat        = "beat"
)

// BeatWorker writes rec as of now: the worker is listed as live until
// WorkerDeadAfterBeats heartbeat intervals pass without another beat, and
// as dead for keep after that (WorkerKeepDefault when keep is 0). Every
// field is written each time, so a record lost with Redis's data comes
// back whole on the next beat.
func (s *Store) BeatWorker(ctx context.Context, rec engine.WorkerRecord, now time.Time, keep time.Duration) error {
	if rec.Name == "" {
		return errors.New("redisstore: worker record: empty name")
	}
	if rec.HeartbeatInterval <= 0 {
		return fmt.Errorf("worker record %q: heartbeat interval %s must be above 0", rec.Name, rec.HeartbeatInterval)
	}
	if keep <= 0 {
		keep = engine.WorkerKeepDefault
	}
	ttl := engine.WorkerDeadAfterBeats*rec.HeartbeatInterval + keep
	key := s.keys.Worker(rec.Name)
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key,
			wfName, rec.Name, wfHost, rec.Host, wfPID, rec.PID, wfVersion, rec.Version,
			wfTasks, strings.Join(rec.Tasks, "\n"), wfConcurrency, rec.Concurrency,
			wfStarted, unixMS(rec.Started), wfInterval, ms(rec.HeartbeatInterval),
			wfLease, ms(rec.LeaseDuration), wfBeat, unixMS(now))
		p.PExpire(ctx, key, ttl)
		p.ZAdd(ctx, s.keys.Workers(), redis.Z{Score: float64(unixMS(now.Add(ttl))), Member: rec.Name})
		p.ZRemRangeByScore(ctx, s.keys.Workers(), "-inf", "("+strconv.FormatInt(unixMS(now), 10))
		return nil
	})
	return err
}

// DeregisterWorker removes name's record: the worker stopped gracefully
// and holds no run.
func (s *Store) DeregisterWorker(ctx context.Context, name string) error {
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, s.keys.Worker(name))
		p.ZRem(ctx, s.keys.Workers(), name)
		return nil
	})
	return err
}

// ListWorkers lists the live and recently dead workers of the namespace
// with the runs each holds, and the runs whose lease lapsed and that await
// redelivery. It reads the pending lists of every task a worker or the
// task registry names.
func (s *Store) ListWorkers(ctx context.Context, p engine.ListWorkersParams) (engine.WorkersView, error) {
	p = p.WithDefaults(time.Now())
	nowMS := strconv.FormatInt(unixMS(p.Now), 10)
	names, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.keys.Workers(), Start: nowMS, Stop: "+inf", ByScore: true, Count: engine.WorkersListMax + 1,
	}).Result()
	if err != nil {
		return engine.WorkersView{}, err
	}
	truncated := len(names) > engine.WorkersListMax
	names = names[:min(len(names), engine.WorkersListMax)]
	workers, err := s.readWorkers(ctx, names)
	if err != nil {
		return engine.WorkersView{}, err
	}
	held, cut, err := s.heldRuns(ctx, workers, p.PendingLimit)
	if err != nil {
		return engine.WorkersView{}, err
	}
	return engine.NewWorkersView(p.Now, p.DefaultLease, workers, held, truncated || cut), nil
}

// readWorkers reads the records of names in one round trip; a name whose
// record is gone is left out.
func (s *Store) readWorkers(ctx context.Context, names []string) ([]engine.WorkerInfo, error) {
	if len(names) == 0 {
		return nil, nil
	}
	cmds := make([]*redis.MapStringStringCmd, len(names))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, n := range names {
			cmds[i] = p.HGetAll(ctx, s.keys.Worker(n))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]engine.WorkerInfo, 0, len(names))
	for _, c := range cmds {
		m := c.Val()
		if len(m) == 0 {
			continue
		}
		num := func(f string) int64 { n, _ := strconv.ParseInt(m[f], 10, 64); return n }
		w := engine.WorkerInfo{WorkerRecord: engine.WorkerRecord{
			Name: m[wfName], Host: m[wfHost], PID: int(num(wfPID)), Version: m[wfVersion],
			Concurrency: int(num(wfConcurrency)), Started: fromMS(num(wfStarted)),
			HeartbeatInterval: time.Duration(num(wfInterval)) * time.Millisecond,
			LeaseDuration:     time.Duration(num(wfLease)) * time.Millisecond,
		}, LastHeartbeat: fromMS(num(wfBeat))}
		if m[wfTasks] != "" {
			w.Tasks = strings.Split(m[wfTasks], "\n")
		}
		out = append(out, w)
	}
	return out, nil
}

// heldRuns reads the pending lists of the tasks the workers and the task
// registry name, up to limit entries each, with the run of each entry.
func (s *Store) heldRuns(ctx context.Context, workers []engine.WorkerInfo, limit int) ([]engine.HeldRun, bool, error) {
	tasks := map[string]bool{}
	for _, w := range workers {
		for _, t := range w.Tasks {
			tasks[t] = true
		}
	}
	registered, err := s.rdb.HKeys(ctx, s.keys.Tasks()).Result()
	if err != nil {
		return nil, false, err
	}
	for _, t := range registered {
		tasks[t] = true
	}
	names := slices.Sorted(maps.Keys(tasks))
	parts, err := s.Partitions(ctx)
	if err != nil {
		return nil, false, err
	}
	// Every task's streams in every partition: cmds[(i*P+part)*L+l], L
	// the priorities.
	n, np := parts.Count(), len(priorities)
	cmds := make([]*redis.XPendingExtCmd, len(names)*n*np)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range names {
			for part := range n {
				for l, prio := range priorities {
					cmds[(i*n+part)*np+l] = p.XPendingExt(ctx, &redis.XPendingExtArgs{
						Stream: parts.keys[part].Lane(t, prio), Group: GroupName, Start: "-", End: "+", Count: int64(limit) + 1,
					})
				}
			}
		}
		return nil
	})
	var held []engine.HeldRun
	truncated := false
	for j, c := range cmds {
		i, part, prio := j/(n*np), j/np%n, priorities[j%np]
		entries, err := c.Result()
		if err != nil {
			if isNoGroup(err) {
				continue // no worker ever read this task
			}
			return nil, false, err
		}
		if len(entries) > limit {
			entries, truncated = entries[:limit], true
		}
		for _, e := range entries {
			held = append(held, engine.HeldRun{Task: names[i], Partition: part, Priority: prio, EntryID: e.ID, Consumer: e.Consumer,
				Idle: e.Idle, Deliveries: e.RetryCount})
		}
	}
	if err := s.entryRuns(ctx, parts, held); err != nil {
		return nil, false, err
	}
	return held, truncated, nil
}

// entryRuns fills in the run ID of each held delivery from its entry.
func (s *Store) entryRuns(ctx context.Context, parts *Partitions, held []engine.HeldRun) error {
	if len(held) == 0 {
		return nil
	}
	cmds := make([]*redis.XMessageSliceCmd, len(held))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, h := range held {
			cmds[i] = p.XRangeN(ctx, parts.keys[h.Partition].Lane(h.Task, h.Priority), h.EntryID, h.EntryID, 1)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, c := range cmds {
		if msgs := c.Val(); len(msgs) == 1 {
			held[i].RunID, _ = msgs[0].Values[entryRunID].(string)
		}
	}
	return nil
}

// isNoGroup reports Redis's answer for a stream or group that does not exist.
func isNoGroup(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "NOGROUP")
}
