package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// waitCounter is a go-redis hook that counts the WAIT commands sent, alone
// or in pipelines.
type waitCounter struct {
	mu sync.Mutex
	n  int
}

func (h *waitCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *waitCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *waitCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.add(c)
		}
		return next(ctx, cmds)
	}
}

func (h *waitCounter) add(cmd redis.Cmder) {
	if n := cmd.Name(); n == "wait" || n == "waitaof" {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
}

func (h *waitCounter) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// durableEnv is a client on a master of the test's own that has one
// replica, its WAITs counted.
type durableEnv struct {
	master, replica *redistest.Server
	rdb             *redis.Client
	waits           *waitCounter
	reg             *prometheus.Registry
	c               *client.Client
}

func newDurableEnv(t *testing.T, opts client.Options) *durableEnv {
	t.Helper()
	m := redistest.StartServer(t, "--repl-diskless-sync-delay", "0")
	e := &durableEnv{master: m, replica: redistest.StartReplica(t, m), waits: &waitCounter{}, reg: prometheus.NewRegistry()}
	e.rdb = redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	e.rdb.AddHook(e.waits)
	opts.Redis, opts.Namespace, opts.Metrics = e.rdb, redistest.Namespace(t), e.reg
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	t.Cleanup(func() { _ = c.Close(); _ = e.rdb.Close() })
	return e
}

// pauseReplica stops the replica (SIGSTOP) until the test ends: it stays
// connected but acknowledges nothing.
func (e *durableEnv) pauseReplica(t *testing.T) {
	t.Helper()
	pid := e.replica.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
}

var durableOrder = task.Must[orderInput, orderResult]("durable-order", task.Options{
	Idempotency: task.TTL(`"order:" + input.id`, time.Hour),
})

// (a) With a replica attached, a trigger that asks for one replica returns
// once it holds the run, and its handle says so.
func TestDurableTriggerReportsTheReplica(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{Durability: task.Durability{Replicas: 1, Timeout: 3 * time.Second}})
	ref, err := client.RunNoWait(context.Background(), e.c, durableOrder, orderInput{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ack := ref.TriggerInfo().Durability
	if ack == nil || ack.Replicas != 1 || !ack.Reached || ack.Wanted.Replicas != 1 {
		t.Fatalf("acknowledgement %+v; want 1 replica", ack)
	}
	if e.waits.count() != 1 {
		t.Fatalf("%d WAITs, want 1", e.waits.count())
	}
	if n, s := counter(t, e.reg, "taskq_durable_triggers_total"), counter(t, e.reg, "taskq_durability_shortfalls_total"); n != 1 || s != 0 {
		t.Fatalf("counted %v durable triggers and %v shortfalls, want 1 and 0", n, s)
	}
}

// counter sums the series of a counter in reg.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// (b) With the replica stopped, the trigger fails within about its
// timeout with a *DurabilityError and no ref: the error carries the run,
// which exists; the shortfall is counted; a retry with the same key finds
// the run, and says that it is not durable either.
func TestDurableTriggerWithTheReplicaStopped(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{OperationTimeout: 10 * time.Second})
	e.pauseReplica(t)
	ctx := context.Background()
	start := time.Now()
	ref, err := client.RunNoWait(ctx, e.c, durableOrder, orderInput{ID: "1"},
		client.WithDurability(task.Durability{Replicas: 1, Timeout: 100 * time.Millisecond}))
	took := time.Since(start)
	var de *client.DurabilityError
	if !errors.As(err, &de) || !errors.Is(err, client.ErrNotDurable) {
		t.Fatalf("got %v, want a *DurabilityError", err)
	}
	// WAIT's timeout ended the call, not the operation timeout.
	if took > 5*time.Second {
		t.Fatalf("the trigger took %s with a durability timeout of 100ms", took)
	}
	if ref != nil {
		t.Fatalf("a trigger that fell short returned a ref, %v, with its error", ref)
	}
	if de.Run == nil || de.Runs != nil || de.Indexes != nil || de.Replicas != 0 || de.Reached || de.Wanted.Replicas != 1 ||
		de.Task != durableOrder.Name() || de.Collision != nil {
		t.Fatalf("error %+v", de)
	}
	run := de.Run
	if r := run.TriggerInfo(); r.Outcome != client.OutcomeCreated || r.IdempotencyKey != "order:1" || r.Durability == nil || r.Durability.Reached {
		t.Fatalf("the run's receipt: %+v", r)
	}
	for _, want := range []string{run.ID(), "written on the master", "0 of 1 replica(s)", "100ms", "will run unless a failover loses it",
		"same idempotency key is safe (it returns the same run)"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
	if info, err := run.Get(ctx); err != nil || info.Status != client.StatusQueued {
		t.Fatalf("the run the error names: %+v, %v", info, err)
	}
	if n := counter(t, e.reg, "taskq_durability_shortfalls_total"); n != 1 {
		t.Fatalf("counted %v shortfalls, want 1", n)
	}

	// The retry: a collision with the same run, which is still not durable.
	_, err = client.RunNoWait(ctx, e.c, durableOrder, orderInput{ID: "1"},
		client.WithDurability(task.Durability{Replicas: 1, Timeout: 100 * time.Millisecond}))
	var coll *client.IdempotencyCollisionError
	if !errors.As(err, &de) || !errors.As(err, &coll) || coll.ExistingRunID != run.ID() || de.Run.ID() != run.ID() ||
		!strings.Contains(err.Error(), "exists on the master") {
		t.Fatalf("retry: got %v, want a collision with %s that is not durable", err, run.ID())
	}
}

// A durable trigger of a task without an idempotency key that falls short
// says a retry would create another run.
func TestDurableShortfallWithoutAKeySaysARetryCreatesAnother(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{OperationTimeout: 10 * time.Second})
	e.pauseReplica(t)
	plain := task.Must[orderInput, orderResult]("durable-plain", task.Options{})
	h, err := e.c.TriggerJSON(context.Background(), plain.Definition(), []byte(`{"id":"1"}`),
		client.WithDurability(task.Durability{Replicas: 1, Timeout: 50 * time.Millisecond}))
	var de *client.DurabilityError
	if h != nil || !errors.As(err, &de) || de.Run == nil || !strings.Contains(err.Error(), "no idempotency key: a retry creates another run") {
		t.Fatalf("got %v, %v; want no handle and a *DurabilityError saying a retry creates another run", h, err)
	}
}

// (c) A batch shares one WAIT, and so do triggers that the client's
// batcher sends together; every handle reports the level.
func TestDurableBatchSharesOneWait(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{})
	ctx := context.Background()
	inputs := make([]orderInput, 600)
	for i := range inputs {
		inputs[i] = orderInput{ID: fmt.Sprint("b", i)}
	}
	refs, err := client.RunMany(ctx, e.c, durableOrder, inputs,
		client.WithDurability(task.Durability{Replicas: 1, Timeout: 3 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	for i, ref := range refs {
		if ack := ref.TriggerInfo().Durability; ack == nil || ack.Replicas != 1 || !ack.Reached {
			t.Fatalf("run %d acknowledged %+v", i, ack)
		}
	}
	if e.waits.count() != 1 {
		t.Fatalf("a batch of %d sent %d WAITs, want 1", len(inputs), e.waits.count())
	}
	if n := counter(t, e.reg, "taskq_durable_triggers_total"); n != float64(len(inputs)) {
		t.Fatalf("counted %v durable triggers, want %d", n, len(inputs))
	}
}

// A batch whose WAIT falls short keeps its partial result: every handle,
// and one *DurabilityError listing each trigger with its index.
func TestDurableBatchShortfallListsTheRuns(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{})
	e.pauseReplica(t)
	ctx := context.Background()
	if _, err := client.RunNoWait(ctx, e.c, durableOrder, orderInput{ID: "held"}); err != nil {
		t.Fatal(err)
	}
	refs, err := client.RunMany(ctx, e.c, durableOrder, []orderInput{{ID: "x"}, {ID: "held"}, {ID: "y"}},
		client.WithDurability(task.Durability{Replicas: 1, Timeout: 50 * time.Millisecond}))
	var de *client.DurabilityError
	var bulk *client.BulkCollisionError
	if !errors.As(err, &de) || !errors.As(err, &bulk) || len(bulk.Collisions) != 1 {
		t.Fatalf("got %v, want a collision and a *DurabilityError", err)
	}
	if refs[0] == nil || refs[1] != nil || refs[2] == nil {
		t.Fatalf("refs %v", refs)
	}
	if fmt.Sprint(de.Indexes) != "[0 1 2]" || de.Run != nil || de.Runs[0].ID() != refs[0].ID() || de.Runs[1].ID() != bulk.Collisions[0].ExistingRunID ||
		de.Runs[2].ID() != refs[2].ID() || fmt.Sprint(bulk.Indexes) != "[1]" {
		t.Fatalf("the error lists %v %v", de.Indexes, de.Runs)
	}
	if ack := refs[0].TriggerInfo().Durability; ack == nil || ack.Reached {
		t.Fatalf("a ref that fell short says %+v", ack)
	}
	if e.waits.count() != 1 {
		t.Fatalf("%d WAITs, want 1", e.waits.count())
	}
}

// (d) Without durability nothing changes: no WAIT is sent and handles
// carry no acknowledgement, on every backend.
func TestTriggerWithoutDurabilitySendsNoWait(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		waits := &waitCounter{}
		b.Client.AddHook(waits)
		c := newClient(t, b)
		ctx := context.Background()
		ref, err := client.RunNoWait(ctx, c, durableOrder, orderInput{ID: "1"})
		if err != nil {
			t.Fatal(err)
		}
		refs, err := client.RunMany(ctx, c, durableOrder, []orderInput{{ID: "2"}, {ID: "3"}},
			client.WithDurability(task.Durability{Timeout: time.Second})) // nothing asked
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append(refs, ref) {
			if r.TriggerInfo().Durability != nil {
				t.Fatalf("run %s has an acknowledgement", r.ID())
			}
		}
		if waits.count() != 0 {
			t.Fatalf("sent %d WAITs without durability", waits.count())
		}
	})
}

// The trigger's level wins over the task's, which wins over the client's;
// a task can turn the client's off.
func TestDurabilityPrecedence(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{Durability: task.Durability{Replicas: 1, Timeout: 2 * time.Second}})
	ctx := context.Background()
	off := task.Must[orderInput, orderResult]("durable-off", task.Options{Durability: &task.Durability{}})
	two := task.Must[orderInput, orderResult]("durable-two", task.Options{
		Durability: &task.Durability{Replicas: 2, Timeout: 20 * time.Millisecond}})
	check := func(name string, h *client.RunHandle, err error, replicas int) {
		t.Helper()
		ack := h.TriggerInfo().Durability
		switch {
		case replicas < 0 && (ack != nil || err != nil):
			t.Fatalf("%s: acknowledgement %+v, %v; want none", name, ack, err)
		case replicas >= 0 && (ack == nil || ack.Wanted.Replicas != replicas):
			t.Fatalf("%s: acknowledgement %+v; want %d replicas asked", name, ack, replicas)
		}
	}
	ref, err := client.RunNoWait(ctx, e.c, durableOrder, orderInput{ID: "client"})
	check("the client's", ref.RunHandle, err, 1)
	ref, err = client.RunNoWait(ctx, e.c, off, orderInput{ID: "off"})
	check("a task's none", ref.RunHandle, err, -1)
	_, err = client.RunNoWait(ctx, e.c, two, orderInput{ID: "two"})
	var de *client.DurabilityError
	if !errors.As(err, &de) {
		t.Fatalf("two replicas of one: %v", err)
	}
	check("the task's", de.Run, nil, 2)
	ref, err = client.RunNoWait(ctx, e.c, two, orderInput{ID: "own"}, client.WithDurability(task.Durability{}))
	check("the trigger's none", ref.RunHandle, err, -1)
}

// A level the client cannot give is refused before anything is written:
// a timeout not below OperationTimeout, and a local fsync on a Redis
// older than 7.2 (checked at New for the client's level).
func TestDurabilityOptionsAreChecked(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	_, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, OperationTimeout: time.Second,
		Durability: task.Durability{Replicas: 1, Timeout: time.Second}})
	if err == nil || !strings.Contains(err.Error(), "operation timeout") {
		t.Fatalf("a durability timeout equal to the operation timeout: %v", err)
	}
	c := newClient(t, b)
	_, err = client.RunNoWait(context.Background(), c, durableOrder, orderInput{ID: "1"},
		client.WithDurability(task.Durability{Replicas: -1}))
	if err == nil || !strings.Contains(err.Error(), "replicas -1") {
		t.Fatalf("replicas -1: %v", err)
	}

	version, err := b.Client.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(version, "redis_version:6.") || strings.Contains(version, "redis_version:7.0.") || strings.Contains(version, "redis_version:7.1.") {
		_, err = client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Durability: task.Durability{LocalFsync: true}})
		var fe *engine.FsyncUnsupportedError
		if !errors.As(err, &fe) || !errors.Is(err, client.ErrFsyncUnsupported) || fe.Version == "" {
			t.Fatalf("a local fsync on a server without WAITAOF: %v", err)
		}
	}
}

// SkipDurability (for an embedded Redis without replicas) triggers without
// waiting, whatever the task and the trigger ask for.
func TestSkipDurabilitySendsNoWait(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	waits := &waitCounter{}
	b.Client.AddHook(waits)
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, SkipDurability: true,
		Durability: task.Durability{Replicas: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	two := task.Must[orderInput, orderResult]("durable-skipped", task.Options{Durability: &task.Durability{Replicas: 2}})
	ref, err := client.RunNoWait(context.Background(), c, two, orderInput{ID: "1"}, client.WithDurability(task.Durability{Replicas: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if ref.TriggerInfo().Durability != nil || waits.count() != 0 {
		t.Fatalf("waited (%d WAITs) with SkipDurability", waits.count())
	}
}

// A retry whose write falls short returns no handle: the error carries the
// new run, which is linked to the run it retries all the same.
func TestDurableRetryShortfallCarriesTheLinkedRun(t *testing.T) {
	t.Parallel()
	e := newDurableEnv(t, client.Options{OperationTimeout: 10 * time.Second,
		Durability: task.Durability{Replicas: 1, Timeout: 50 * time.Millisecond}})
	ctx := context.Background()
	plain := task.Must[orderInput, orderResult]("durable-retry", task.Options{})
	registerDef(t, e.c, plain.Definition())
	orig, err := client.RunNoWait(ctx, e.c, plain, orderInput{ID: "1"}, client.WithDurability(task.Durability{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orig.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	e.pauseReplica(t)
	h, err := e.c.Inspector().RetryRun(ctx, orig.ID())
	var de *client.DurabilityError
	if h != nil || !errors.As(err, &de) || de.Run == nil || de.Run.ID() == orig.ID() {
		t.Fatalf("retry: %v, %v; want no handle and a *DurabilityError carrying the new run", h, err)
	}
	info, err := e.c.Inspector().GetRun(ctx, orig.ID())
	if err != nil || info.RetriedBy != de.Run.ID() {
		t.Fatalf("the original after the retry: %+v, %v; want it retried by %s", info, err, de.Run.ID())
	}
}
