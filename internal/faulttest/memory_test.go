package faulttest_test

import (
	"bytes"
	"context"
	"errors"
	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type memIn struct {
	ID  string `json:"id"`
	Pad string `json:"pad"`
}

type memOut struct {
	ID string `json:"id"`
}

// memTask holds its key while a run is active and releases it when the run
// ends: the strategy whose keys taskq frees as runs finish.
var memTask = task.Must[memIn, memOut]("fill", task.Options{Idempotency: task.Status(`"k:" + input.id`, time.Hour)})

func usedMemory(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			n, _ := strconv.ParseInt(v, 10, 64)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// statuses reads the status of each run (by key id), "" for a run whose
// record is gone.
func statuses(t *testing.T, rdb *redis.Client, ns string, runs map[string]string) map[string]string {
	t.Helper()
	ctx := context.Background()
	pipe := rdb.Pipeline()
	cmds := map[string]*redis.StringCmd{}
	for id, run := range runs {
		cmds[id] = pipe.HGet(ctx, "taskq:{"+ns+"}:run:"+run, "status")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	out := make(map[string]string, len(runs))
	for id, c := range cmds {
		out[id] = c.Val()
	}
	return out
}

// At maxmemory with noeviction, every trigger that would create a run is
// refused with the typed out-of-memory error (a duplicate still gets its
// collision), and nothing accepted is lost. A worker started then, while
// triggers go on being refused, drains the queue: starting it, beginning
// and finishing runs all work at the limit. Once the finished runs'
// retention has expired, triggers are accepted again without restarting
// anything.
func TestAtMaxmemoryTriggersAreRefusedWhileWorkersDrainTheQueue(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "--maxmemory-policy", "noeviction", "--appendonly", "no")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	const ns, retention, headroom, limitMargin = "mem", 4 * time.Second, 4 << 20, 256 << 10
	limit := usedMemory(t, rdb) + headroom
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Options{Redis: rdb, Namespace: ns, Logger: quiet, Retention: retention})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pad := strings.Repeat("x", 1000)
	trigger := func(id string) (string, error) {
		ref, err := client.RunNoWait(ctx, c, memTask, memIn{ID: id, Pad: pad})
		if err != nil {
			return "", err
		}
		return ref.ID(), nil
	}

	// Fill Redis until it refuses.
	accepted := map[string]string{} // key id -> run id
	next := 0
	for ; ; next++ {
		if next > 100_000 {
			t.Fatalf("%d triggers of 1 kB accepted under a %d kB headroom", next, headroom>>10)
		}
		id := strconv.Itoa(next)
		run, err := trigger(id)
		if errors.Is(err, client.ErrOutOfMemory) {
			break
		}
		if err != nil {
			t.Fatalf("trigger %d: %v", next, err)
		}
		accepted[id] = run
	}
	t.Logf("%d runs accepted under %d kB of headroom, then refused", len(accepted), headroom>>10)
	if len(accepted) < 100 {
		t.Fatalf("only %d runs accepted", len(accepted))
	}
	// Redis is at its limit now, but within a few kB of it: the server's
	// own buffers shrink as it goes (an idle client's query buffer, say),
	// and a trigger would fit again. The limit is set a little below the
	// memory in use, so that "at the limit" stays true for what follows.
	limit = usedMemory(t, rdb) - limitMargin
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}

	// At the limit every new trigger is refused, as what it is.
	for i := 0; i < 50; i++ {
		next++
		_, err := trigger(strconv.Itoa(next))
		var oom *engine.OutOfMemoryError
		if !errors.As(err, &oom) || !errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrIdempotencyCollision) ||
			!strings.Contains(err.Error(), "out of memory") || strings.Contains(err.Error(), "holds a") {
			t.Fatalf("trigger at maxmemory: %v; want an *OutOfMemoryError", err)
		}
	}
	// A duplicate needs no memory: it is answered with its owner.
	var coll *client.IdempotencyCollisionError
	if _, err := trigger("0"); !errors.As(err, &coll) || coll.ExistingRunID != accepted["0"] {
		t.Fatalf("duplicate at maxmemory: %v; want a collision with %s", err, accepted["0"])
	}
	// Raising maxmemory lets triggers in at once; lowering it refuses them again.
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit+(1<<20), 10)).Err(); err != nil {
		t.Fatal(err)
	}
	next++
	id := strconv.Itoa(next)
	run, err := trigger(id)
	if err != nil {
		t.Fatalf("trigger with maxmemory raised: %v", err)
	}
	accepted[id] = run
	if err := rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(limit, 10)).Err(); err != nil {
		t.Fatal(err)
	}
	next++
	if _, err := trigger(strconv.Itoa(next)); !errors.Is(err, client.ErrOutOfMemory) {
		t.Fatalf("trigger with maxmemory lowered again: %v; want ErrOutOfMemory", err)
	}
	// Nothing accepted is lost: every run is queued.
	for id, st := range statuses(t, rdb, ns, accepted) {
		if st != "queued" {
			t.Fatalf("run of %s is %q at maxmemory, want queued", id, st)
		}
	}

	// Triggers go on, and are refused, while a worker starts and drains.
	var (
		mu         sync.Mutex
		during     = map[string]string{} // accepted while draining
		refused    atomic.Int64
		firstRefal = make(chan struct{})
		stop       = make(chan struct{})
		loopDone   = make(chan error, 1)
	)
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				loopDone <- nil
				return
			default:
			}
			id := "d" + strconv.Itoa(n)
			run, err := trigger(id)
			switch {
			case errors.Is(err, client.ErrOutOfMemory):
				if refused.Add(1) == 1 {
					close(firstRefal)
				}
				time.Sleep(time.Millisecond)
			case err != nil:
				loopDone <- err
				return
			default:
				mu.Lock()
				during[id] = run
				mu.Unlock()
			}
			if n > 200_000 {
				loopDone <- errors.New("trigger loop ran past its bound")
				return
			}
		}
	}()
	<-firstRefal

	var ranMu sync.Mutex
	ran := map[string]int{}
	w, err := worker.New(worker.Options{Redis: rdb, Namespace: ns, Logger: quiet, Concurrency: 20, Retention: retention,
		LeaseDuration: 10 * time.Second, FetchBlock: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, memTask, func(ctx worker.Context, in memIn) (memOut, error) {
		ranMu.Lock()
		ran[in.ID]++
		ranMu.Unlock()
		return memOut{ID: in.ID}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("worker start at maxmemory: %v", err)
	}
	defer w.Shutdown(context.Background())

	waitDone := func(runs map[string]string, what string) {
		t.Helper()
		done := map[string]bool{}
		deadline := time.Now().Add(90 * time.Second)
		for len(done) < len(runs) {
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d %s runs finished after 90s: the queue does not drain at maxmemory", len(done), len(runs), what)
			}
			for id, st := range statuses(t, rdb, ns, runs) {
				switch {
				case st == "succeeded":
					done[id] = true
				case st == "" && !done[id]:
					t.Fatalf("run of %s vanished before it was seen finished", id)
				case st != "" && st != "queued" && st != "running":
					t.Fatalf("run of %s is %s", id, st)
				}
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitDone(accepted, "accepted")
	close(stop)
	if err := <-loopDone; err != nil {
		t.Fatalf("trigger while draining: %v", err)
	}
	mu.Lock()
	t.Logf("while the worker drained: %d triggers refused, %d accepted", refused.Load(), len(during))
	waitDone(during, "later")
	for id, r := range during {
		accepted[id] = r
	}
	mu.Unlock()
	ranMu.Lock()
	for id := range accepted {
		if ran[id] != 1 {
			t.Errorf("the run of %s ran %d times, want once", id, ran[id])
		}
	}
	if len(ran) != len(accepted) {
		t.Errorf("handlers ran for %d keys, %d runs were accepted", len(ran), len(accepted))
	}
	ranMu.Unlock()

	// Once the finished runs' retention is over, their memory is free
	// again and triggers are accepted, with nothing restarted.
	deadline := time.Now().Add(retention + 60*time.Second)
	for {
		gone := 0
		for _, st := range statuses(t, rdb, ns, accepted) {
			if st == "" {
				gone++
			}
		}
		if gone == len(accepted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d finished runs still there %s after their retention", len(accepted)-gone, len(accepted), time.Minute)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("after retention: used_memory %d kB, maxmemory %d kB", usedMemory(t, rdb)>>10, limit>>10)
	for i := 0; i < 100; i++ {
		if _, err := trigger("after" + strconv.Itoa(i)); err != nil {
			t.Fatalf("trigger %d once the finished runs expired: %v", i, err)
		}
	}
}

// syncBuf collects log lines written from several goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) > 0 {
			return mf.GetMetric()[0].GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// A Redis whose maxmemory-policy evicts keys is refused when a client or a
// worker starts, with an error naming the policy, the server and the fix;
// with AllowEvictingRedis both start, each with a warning, and the
// accepted-risk metric is set. A policy changed to an evicting one while a
// worker runs makes its RedisErr say so, with an ERROR log and the unsafe
// metric.
func TestEvictingRedisIsRefusedAtStartUnlessTheRiskIsAccepted(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	noop := func(ctx worker.Context, in memIn) (memOut, error) { return memOut{ID: in.ID}, nil }

	_, err := client.New(client.Options{Redis: rdb, Namespace: "ev", Logger: quiet})
	var ep *redisguard.EvictingPolicyError
	if !errors.As(err, &ep) || !errors.Is(err, client.ErrEvictingRedis) || ep.Policy != "allkeys-lru" || ep.Addr != srv.Addr() ||
		!strings.Contains(err.Error(), "noeviction") || !strings.Contains(err.Error(), "AllowEvictingRedis") {
		t.Fatalf("client.New on allkeys-lru: %v; want an *EvictingPolicyError naming the policy, the server and the fix", err)
	}
	w, err := worker.New(worker.Options{Redis: rdb, Namespace: "ev", Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, memTask, noop); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); !errors.As(err, &ep) || ep.Policy != "allkeys-lru" {
		t.Fatalf("worker.Start on allkeys-lru: %v; want an *EvictingPolicyError", err)
	}
	if n := rdb.DBSize(ctx).Val(); n != 0 {
		t.Fatalf("a refused worker wrote %d keys", n)
	}

	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	c, err := client.New(client.Options{Redis: rdb, Namespace: "ev", Logger: log, AllowEvictingRedis: true})
	if err != nil {
		t.Fatalf("client.New with AllowEvictingRedis: %v", err)
	}
	defer c.Close()
	reg := prometheus.NewRegistry()
	w, err = worker.New(worker.Options{Redis: rdb, Namespace: "ev", Logger: log, AllowEvictingRedis: true, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w, memTask, noop); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatalf("worker.Start with AllowEvictingRedis: %v", err)
	}
	defer w.Shutdown(context.Background())
	if n := strings.Count(logs.String(), "level=WARN"); n != 2 || !strings.Contains(logs.String(), "allkeys-lru") {
		t.Fatalf("want one warning from the client and one from the worker, naming the policy:\n%s", logs)
	}
	if v, ok := gaugeValue(t, reg, "taskq_redis_eviction_risk_accepted"); !ok || v != 1 {
		t.Fatalf("taskq_redis_eviction_risk_accepted = %v (%v), want 1", v, ok)
	}
	if redisErr(w) != nil || clientlink.Of(c).Guard.Err() != nil {
		t.Fatalf("accepted risk: RedisErr %v, client %v; want nil", redisErr(w), clientlink.Of(c).Guard.Err())
	}

	// A worker that started on noeviction notices a change at run time.
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	logs2 := &syncBuf{}
	reg2 := prometheus.NewRegistry()
	w2, err := worker.New(worker.Options{Redis: rdb, Namespace: "ev", Logger: slog.New(slog.NewTextHandler(logs2, nil)),
		Metrics: reg2, RedisCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := worker.Handle(w2, memTask, noop); err != nil {
		t.Fatal(err)
	}
	if err := w2.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w2.Shutdown(context.Background())
	if v, _ := gaugeValue(t, reg2, "taskq_redis_eviction_policy_unsafe"); v != 0 || redisErr(w2) != nil {
		t.Fatalf("on noeviction: unsafe %v, RedisErr %v", v, redisErr(w2))
	}
	if err := rdb.ConfigSet(ctx, "maxmemory-policy", "volatile-lfu").Err(); err != nil {
		t.Fatal(err)
	}
	// The check records the error, then logs it: both are waited for.
	deadline := time.Now().Add(10 * time.Second)
	for redisErr(w2) == nil || !strings.Contains(logs2.String(), "level=ERROR") {
		if time.Now().After(deadline) {
			t.Fatalf("the policy changed at run time was not noticed and logged within 10s: RedisErr %v; log:\n%s", redisErr(w2), logs2)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !errors.Is(redisErr(w2), client.ErrEvictingRedis) || !strings.Contains(logs2.String(), "level=ERROR") ||
		!strings.Contains(logs2.String(), "volatile-lfu") {
		t.Fatalf("RedisErr %v; log:\n%s", redisErr(w2), logs2)
	}
	if v, _ := gaugeValue(t, reg2, "taskq_redis_eviction_policy_unsafe"); v != 1 {
		t.Fatalf("taskq_redis_eviction_policy_unsafe = %v after the change, want 1", v)
	}
}

// redisErr is why w's readiness says Redis may evict keys, or nil.
func redisErr(w *worker.Worker) error {
	if err := w.Ready(context.Background()); errors.Is(err, worker.ErrRedisMayEvictKeys) {
		return err
	}
	return nil
}
