package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
)

// nsMemory is what the namespace's keys use, by kind (the part of the key
// after the prefix, up to the next colon), from MEMORY USAGE ... SAMPLES 0.
type nsMemory struct {
	byKind map[string]int64
	count  map[string]int
}

func (m nsMemory) total() int64 {
	var t int64
	for _, v := range m.byKind {
		t += v
	}
	return t
}

func (e *env) memory(ctx context.Context) (nsMemory, error) {
	m := nsMemory{byKind: map[string]int64{}, count: map[string]int{}}
	prefix := "taskq:{" + e.ns + "}:"
	var cursor uint64
	for {
		keys, next, err := e.admin.Scan(ctx, cursor, prefix+"*", 1000).Result()
		if err != nil {
			return m, err
		}
		pipe := e.admin.Pipeline()
		cmds := make([]*redis.IntCmd, len(keys))
		for i, k := range keys {
			cmds[i] = pipe.MemoryUsage(ctx, k, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
			return m, err
		}
		for i, k := range keys {
			kind, _, _ := strings.Cut(strings.TrimPrefix(k, prefix), ":")
			m.byKind[kind] += cmds[i].Val() // 0 if the key expired meanwhile
			m.count[kind]++
		}
		if cursor = next; cursor == 0 {
			return m, nil
		}
	}
}

// benchMemory measures the Redis bytes of queued runs, held keys and
// completed run records, and checks that the namespace returns to its
// baseline once the records' retention has passed.
func benchMemory(ctx context.Context, e *env, rep *report) error {
	cfg := e.cfg
	n := cfg.memN
	e.printf("\n== memory: %d runs with a small input, retention %s\n", n, cfg.retention)
	rdb := e.redisClient()
	defer rdb.Close()
	c, err := client.New(client.Options{Redis: rdb, Namespace: e.ns, Logger: e.log, Retention: cfg.retention})
	if err != nil {
		return err
	}
	defer c.Close()
	trigger := func(prefix string) func(ctx context.Context, i int) error {
		return func(ctx context.Context, i int) error {
			_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: prefix + strconv.Itoa(i)})
			return err
		}
	}
	stream := e.store().Keys().Stream(e.noop.Name())
	waitDrained := func() error {
		for {
			left, err := e.admin.XLen(ctx, stream).Result()
			if err != nil || left == 0 {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	settle := func() error {
		// Records expire after the retention; the runs index is swept as
		// the workers' janitor does.
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(cfg.retention + 200*time.Millisecond):
		}
		_, _, err := e.store().SweepRuns(ctx, 0, time.Now(), 0, 100000)
		return err
	}

	// Warm-up: runs through a worker leave what a namespace keeps at rest
	// (registry, stream, consumer group and its consumer); enough of them
	// that the empty stream's own structures have reached their size.
	stop, err := e.startWorkers(ctx, 1, noopHandler)
	if err != nil {
		return err
	}
	if _, err := drive(ctx, e, "memory warm-up", 100, cfg.concurrency, 1, trigger("warm-")); err != nil {
		stop()
		return err
	}
	err = waitDrained()
	stop()
	if err != nil {
		return err
	}
	if err := settle(); err != nil {
		return err
	}
	base, err := e.memory(ctx)
	if err != nil {
		return err
	}
	e.printf("  baseline: %s bytes in %d keys %v\n", group(base.total()), len(base.count), base.byKind)

	// Queued: no worker running.
	if _, err := drive(ctx, e, "memory queueing", n, cfg.concurrency, 1, trigger("mem-")); err != nil {
		return err
	}
	queued, err := e.memory(ctx)
	if err != nil {
		return err
	}
	per := func(m nsMemory, kind string) float64 { return float64(m.byKind[kind]-base.byKind[kind]) / float64(n) }
	perAvg := func(m nsMemory, kind string) float64 {
		if m.count[kind] == 0 {
			return 0
		}
		return float64(m.byKind[kind]) / float64(m.count[kind])
	}
	queuedTotal := float64(queued.total()-base.total()) / float64(n)
	e.printf("  queued: %.0f bytes/run in all: run record %.0f, held key %.0f, stream entry %.0f, runs index %.0f\n",
		queuedTotal, perAvg(queued, "run"), perAvg(queued, "key"), per(queued, "stream"), per(queued, "runs"))

	// Completed.
	var sample map[string]string
	stop, err = e.startWorkers(ctx, 1, noopHandler)
	if err != nil {
		return err
	}
	// Measured before the worker stops: records expire one retention
	// after they end.
	err = waitDrained()
	var done nsMemory
	if err == nil {
		done, err = e.memory(ctx)
	}
	if err == nil {
		var ids []string
		if ids, err = e.admin.ZRange(ctx, e.store().Keys().Runs(), -1, -1).Result(); err == nil && len(ids) > 0 {
			sample, _ = e.admin.HGetAll(ctx, e.store().Keys().Run(ids[0])).Result()
		}
	}
	stop()
	if err != nil {
		return err
	}
	doneRecord := perAvg(done, "run")
	doneTotal := float64(done.total()-base.total()) / float64(n)
	e.printf("  completed: %.0f bytes/run in all: run record %.0f, runs index %.0f, keys held %d\n",
		doneTotal, doneRecord, per(done, "runs"), done.count["key"])
	e.printf("  a completed record (%d fields): %v\n", len(sample), sample)

	// After retention.
	if err := settle(); err != nil {
		return err
	}
	after, err := e.memory(ctx)
	if err != nil {
		return err
	}
	// The run statistics' counters (stats:m:, stats:c:) are the
	// namespace's, per minute and per ten minutes, and expire on their own
	// schedule (see RunStats): a measurement that spans another minute
	// adds one. They are left out of the comparison.
	diff := after.total() - after.byKind["stats"] - (base.total() - base.byKind["stats"])
	// Back to baseline: nothing of the runs is left (records, keys, index
	// entries, stream entries, pending deliveries), and the bytes are the
	// baseline's, give or take one allocation inside the stream.
	left, err := e.leftovers(ctx)
	if err != nil {
		return err
	}
	back := left == "" && diff <= 128 && diff >= -128
	e.printf("  after retention: %s bytes in %d keys %v (baseline %s)\n", group(after.total()), len(after.count), after.byKind, group(base.total()))

	rep.add(row{scenario: "memory", variant: "queued run (all keys)", figure: fmt.Sprintf("%.0f B/run: record %.0f, key %.0f, stream %.0f, index %.0f",
		queuedTotal, perAvg(queued, "run"), perAvg(queued, "key"), per(queued, "stream"), per(queued, "runs"))})
	rep.add(row{scenario: "memory", variant: "held key", figure: fmt.Sprintf("%.0f B/key", perAvg(queued, "key"))})
	rep.add(row{scenario: "memory", variant: "completed run record", figure: fmt.Sprintf("%.0f B/run (+%.0f index)", doneRecord, per(done, "runs")),
		target: "<=512B", verdict: verdict(doneRecord <= 512)})
	rep.add(row{scenario: "memory", variant: "after retention", figure: fmt.Sprintf("%+d B vs baseline, %d run records, %d keys", diff, after.count["run"], after.count["key"]),
		target: "baseline", verdict: verdict(back)})
	if left != "" {
		e.printf("  left behind: %s\n", left)
	}
	e.printf("memory: queued %.0f B/run, held key %.0f B, completed record %.0f B, after retention %+d B vs baseline\n",
		queuedTotal, perAvg(queued, "key"), doneRecord, diff)
	return nil
}

// leftovers describes what runs left in the namespace, or "" for nothing:
// run records, held keys, runs index entries, stream entries and pending
// deliveries.
func (e *env) leftovers(ctx context.Context) (string, error) {
	k := e.store().Keys()
	var parts []string
	for _, what := range []string{"run:*", "key:*"} {
		n, err := e.keysCount(ctx, what)
		if err != nil {
			return "", err
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	if n, err := e.admin.ZCard(ctx, k.Runs()).Result(); err != nil {
		return "", err
	} else if n > 0 {
		parts = append(parts, fmt.Sprintf("%d runs index entries", n))
	}
	stream := k.Stream(e.noop.Name())
	if n, err := e.admin.XLen(ctx, stream).Result(); err != nil {
		return "", err
	} else if n > 0 {
		parts = append(parts, fmt.Sprintf("%d stream entries", n))
	}
	if p, err := e.admin.XPending(ctx, stream, redisstore.GroupName).Result(); err != nil {
		return "", err
	} else if p.Count > 0 {
		parts = append(parts, fmt.Sprintf("%d pending deliveries", p.Count))
	}
	return strings.Join(parts, ", "), nil
}
