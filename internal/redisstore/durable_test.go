package redisstore_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// commandCounter is a go-redis hook that counts the commands sent by name,
// alone or in pipelines, and the pipelines; under "script call that ran" it counts the
// script calls that ran, whichever command sent them (see
// redistest.ScriptRan).
type commandCounter struct {
	mu sync.Mutex
	n  map[string]int
	// singles counts commands sent alone, pipelines the pipelines that
	// carry a script call or a WAIT: each is one round trip.
	singles, pipelines int
}

func newCommandCounter() *commandCounter { return &commandCounter{n: map[string]int{}} }

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.mu.Lock()
		h.n[cmd.Name()]++
		if redistest.IsScriptCall(cmd.Name()) && redistest.ScriptRan(err) {
			h.n["script call that ran"]++
		}
		h.singles++
		h.mu.Unlock()
		return err
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.mu.Lock()
		for _, c := range cmds {
			h.n[c.Name()]++
			if redistest.IsScriptCall(c.Name()) && redistest.ScriptRan(c.Err()) {
				h.n["script call that ran"]++
			}
		}
		// Not the handshake of a new connection (HELLO, CLIENT SETINFO).
		for _, c := range cmds {
			if n := c.Name(); redistest.IsScriptCall(n) || n == "wait" {
				h.pipelines++
				break
			}
		}
		h.mu.Unlock()
		return err
	}
}

func (h *commandCounter) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[name]
}

func (h *commandCounter) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n, h.singles, h.pipelines = map[string]int{}, 0, 0
}

// replicated is a master of the test's own with one replica.
type replicated struct {
	master, replica *redistest.Server
	// rdb talks to the master, counted by hook; view reads the replica.
	rdb  *redis.Client
	view *redis.Client
	hook *commandCounter
}

func startReplicated(t *testing.T) *replicated {
	t.Helper()
	m := redistest.StartServer(t, "--repl-diskless-sync-delay", "0")
	r := redistest.StartReplica(t, m)
	rs := &replicated{master: m, replica: r, hook: newCommandCounter(),
		rdb:  redis.NewClient(&redis.Options{Addr: m.Addr()}),
		view: redis.NewClient(&redis.Options{Addr: r.Addr()})}
	rs.rdb.AddHook(rs.hook)
	t.Cleanup(func() { _ = rs.rdb.Close(); _ = rs.view.Close() })
	return rs
}

// pause stops the replica (SIGSTOP) until the test ends: it stays
// connected but acknowledges nothing.
func (rs *replicated) pause(t *testing.T) {
	t.Helper()
	pid := rs.replica.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
}

func durable(ps []*engine.EnqueueParams, d engine.Durability) []*engine.EnqueueParams {
	for _, p := range ps {
		p.Durability = d
	}
	return ps
}

// (a) With a replica attached, a durable trigger's result says one replica
// holds it, and the replica does: WAIT ran after the write, on its
// connection.
func TestDurableTriggerReachesTheReplica(t *testing.T) {
	t.Parallel()
	rs := startReplicated(t)
	f := newFixture(t, &redistest.Backend{Client: rs.rdb, Namespace: redistest.Namespace(t)})
	ps := durable(f.statusRuns("ship", "a", "b"), engine.Durability{Replicas: 1, Timeout: 5 * time.Second})
	res, errs := f.s.EnqueueBatch(f.ctx, ps)
	for i, r := range res {
		if errs[i] != nil || r.Outcome != engine.TriggerCreated {
			t.Fatalf("trigger %d: %+v, %v", i, r, errs[i])
		}
		if r.Ack == nil || r.Ack.Replicas != 1 || !r.Ack.Reached() || r.Ack.Err != nil {
			t.Fatalf("trigger %d acknowledged %+v, want 1 replica", i, r.Ack)
		}
		// WAIT returned 1, so the replica has applied the write.
		if n, err := rs.view.Exists(f.ctx, f.k.Run(ps[i].RunID)).Result(); err != nil || n != 1 {
			t.Fatalf("the replica does not hold run %s: %d, %v", ps[i].RunID, n, err)
		}
	}
	if got := rs.hook.count("wait"); got != 1 {
		t.Fatalf("%d WAITs for one batch, want 1", got)
	}
}

// (b) With the replica stopped, a durable trigger still creates its run,
// and its result says no replica acknowledged it within the timeout.
func TestDurableTriggerWithTheReplicaStoppedFallsShort(t *testing.T) {
	t.Parallel()
	rs := startReplicated(t)
	f := newFixture(t, &redistest.Backend{Client: rs.rdb, Namespace: redistest.Namespace(t)})
	rs.pause(t)
	p := f.params("ship", "a", engine.StrategyStatus)
	p.Durability = engine.Durability{Replicas: 1, Timeout: 100 * time.Millisecond}
	r, err := f.s.Enqueue(f.ctx, p)
	if err != nil || r.Outcome != engine.TriggerCreated {
		t.Fatalf("durable trigger: %+v, %v", r, err)
	}
	if r.Ack == nil || r.Ack.Reached() || r.Ack.Replicas != 0 || r.Ack.Err != nil {
		t.Fatalf("acknowledged %+v, want 0 replicas", r.Ack)
	}
	if _, err := f.s.GetRun(f.ctx, p.RunID); err != nil {
		t.Fatalf("the run was not created: %v", err)
	}
}

// A duplicate writes nothing of its own, yet its durable acknowledgement
// must vouch for the owner's record, which another client wrote: with the
// replica stopped after the owner was created without durability, a
// durable duplicate, sent on a connection whose own writes the replica
// holds, falls short instead of reporting the replica. (Redis 7.0 moves a
// connection's WAIT offset on any script call, written or not; the ack
// mark makes this hold on servers that move it only on a write.)
func TestDurableDuplicateWaitsForTheOwnersWrite(t *testing.T) {
	t.Parallel()
	rs := startReplicated(t)
	ns := redistest.Namespace(t)
	f := newFixture(t, &redistest.Backend{Client: rs.rdb, Namespace: ns})
	// The duplicates' client, whose writes all reached the replica.
	other := redis.NewClient(&redis.Options{Addr: rs.master.Addr(), PoolSize: 1})
	t.Cleanup(func() { _ = other.Close() })
	dups := redisstore.New(other, ns)
	first := f.params("ship", "earlier", engine.StrategyStatus)
	first.Durability = engine.Durability{Replicas: 1, Timeout: 5 * time.Second}
	if r, err := dups.Enqueue(f.ctx, first); err != nil || !r.Ack.Reached() {
		t.Fatalf("first trigger: %+v, %v", r, err)
	}

	rs.pause(t)
	owner := f.params("ship", "a", engine.StrategyStatus)
	f.enqueue(owner)
	for _, policy := range []engine.Policy{engine.PolicyReject, engine.PolicyAttach} {
		dup := f.params("ship", "a", engine.StrategyStatus)
		dup.Policy = policy
		dup.Durability = engine.Durability{Replicas: 1, Timeout: 100 * time.Millisecond}
		r, err := dups.Enqueue(f.ctx, dup)
		if err != nil || r.Owner != owner.RunID {
			t.Fatalf("%s duplicate: %+v, %v", policy, r, err)
		}
		if r.Ack == nil || r.Ack.Reached() || r.Ack.Replicas != 0 {
			t.Fatalf("%s duplicate acknowledged %+v while the replica cannot hold the owner", policy, r.Ack)
		}
	}
}

// (c) A batch shares one WAIT, however many script calls carry it, and a
// batch that mixes levels sends one WAIT per level; triggers that ask for
// none get no Ack.
func TestDurableBatchSharesOneWait(t *testing.T) {
	t.Parallel()
	rs := startReplicated(t)
	f := newFixture(t, &redistest.Backend{Client: rs.rdb, Namespace: redistest.Namespace(t)})
	keys := make([]string, redisstore.MaxItemsPerCall*2+10)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	one := engine.Durability{Replicas: 1, Timeout: 5 * time.Second}
	rs.hook.reset()
	ps := durable(f.statusRuns("ship", keys...), one)
	res, errs := f.s.EnqueueBatch(f.ctx, ps)
	for i := range res {
		if errs[i] != nil || res[i].Ack == nil || res[i].Ack.Replicas != 1 {
			t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
		}
	}
	if w, e := rs.hook.count("wait"), rs.hook.count("script call that ran"); w != 1 || e != 3 {
		t.Fatalf("%d triggers sent %d script calls and %d WAITs, want 3 and 1", len(ps), e, w)
	}

	rs.hook.reset()
	mixed := f.statusRuns("ship", "m1", "m2", "m3", "m4")
	mixed[1].Durability = one
	// The same level: a zero timeout is the default.
	mixed[2].Durability = engine.Durability{Replicas: 1}
	mixed[3].Durability = engine.Durability{Replicas: 1, Timeout: task.DurabilityTimeoutDefault}
	res, errs = f.s.EnqueueBatch(f.ctx, mixed)
	for i, want := range []bool{false, true, true, true} {
		if errs[i] != nil || res[i].Outcome != engine.TriggerCreated || (res[i].Ack != nil) != want {
			t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
		}
	}
	if got := rs.hook.count("wait"); got != 2 {
		t.Fatalf("a batch asking for two levels sent %d WAITs, want 2", got)
	}
}

// (d) Without durability a trigger is what it always was: one script call,
// no pipeline, no WAIT, no ack mark, and no Ack in its result; on every
// backend.
func TestTriggerWithoutDurabilitySendsNoWait(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		hook := newCommandCounter()
		b.Client.AddHook(hook)
		f := newFixture(t, b)
		ps := f.statusRuns("ship", "a", "b")
		ps[1].Durability = engine.Durability{Timeout: time.Second} // no replica, no fsync: nothing asked
		res, errs := f.s.EnqueueBatch(f.ctx, ps)
		for i := range res {
			if errs[i] != nil || res[i].Ack != nil {
				t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
			}
		}
		// FCALL or EVALSHA, sent again (after its library or script is
		// loaded) when the server lacked it: one call that ran.
		if hook.count("wait") != 0 || hook.count("set") != 0 || hook.pipelines != 0 || hook.count("script call that ran") != 1 {
			t.Fatalf("sent %v in %d pipelines, want one script call", hook.n, hook.pipelines)
		}
	})
}

// On miniredis, which has no replicas, WAIT answers 0: a durable trigger
// is created and falls short.
func TestDurableTriggerOnMiniredisFallsShort(t *testing.T) {
	t.Parallel()
	f := newFixture(t, redistest.Mini(t))
	p := f.params("ship", "a", engine.StrategyStatus)
	p.Durability = engine.Durability{Replicas: 1, Timeout: 10 * time.Millisecond}
	r, err := f.s.Enqueue(f.ctx, p)
	if err != nil || r.Outcome != engine.TriggerCreated || r.Ack == nil || r.Ack.Reached() {
		t.Fatalf("durable trigger on miniredis: %+v, %v", r, err)
	}
}

// A local fsync needs WAITAOF, Redis 7.2 or later: an older server, or
// one that does not tell its version, refuses the trigger before anything
// is written, naming the version.
func TestDurableFsyncNeedsRedis72(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		v, _ := f.s.ServerVersion(f.ctx)
		if v != "" && !strings.HasPrefix(v, "6.") && !strings.HasPrefix(v, "7.0") && !strings.HasPrefix(v, "7.1") {
			// A server with WAITAOF is accepted.
			if err := f.s.CheckDurability(f.ctx, engine.Durability{LocalFsync: true}); err != nil {
				t.Fatalf("redis %s refused a local fsync: %v", v, err)
			}
			return
		}
		p := f.params("ship", "a", engine.StrategyStatus)
		p.Durability = engine.Durability{LocalFsync: true}
		_, err := f.s.Enqueue(f.ctx, p)
		var fe *engine.FsyncUnsupportedError
		if !errors.As(err, &fe) || !errors.Is(err, engine.ErrFsyncUnsupported) || fe.Version != v ||
			!strings.Contains(err.Error(), "7.2") {
			t.Fatalf("fsync on %q: %v", v, err)
		}
		if v != "" && !strings.Contains(err.Error(), v) {
			t.Fatalf("the error does not name version %s: %v", v, err)
		}
		if _, err := f.s.GetRun(f.ctx, p.RunID); !errors.Is(err, engine.ErrRunNotFound) {
			t.Fatalf("a refused trigger left run %s: %v", p.RunID, err)
		}
	})
}

// A script cache emptied after the store loaded the script (a restart, a
// failover to a replica that never ran it) costs a second pipeline, not
// the trigger: the call that met "Function not found" (or, sent with
// EVALSHA, NOSCRIPT) is sent again with the script's source, with its own
// WAIT, and the function's library is loaded again for the calls after.
func TestDurableTriggerAfterTheScriptCacheIsFlushed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		evalsha bool // the store sends EVALSHA
	}{
		{"function", false},
		{"evalsha", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rs := startReplicated(t)
			f := newFixture(t, &redistest.Backend{Client: rs.rdb, Namespace: redistest.Namespace(t)})
			if c.evalsha {
				f.s.SendScriptsWithEvalSha()
			}
			d := engine.Durability{Replicas: 1, Timeout: 5 * time.Second}
			ps := durable(f.statusRuns("ship", "a", "b", "c"), d)
			if r, err := f.s.Enqueue(f.ctx, ps[0]); err != nil || !r.Ack.Reached() {
				t.Fatalf("first trigger: %+v, %v", r, err)
			}
			if err := rs.rdb.ScriptFlush(f.ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rs.rdb.FunctionFlush(f.ctx).Err(); err != nil {
				t.Fatal(err)
			}
			rs.hook.reset()
			r, err := f.s.Enqueue(f.ctx, ps[1])
			if err != nil || r.Outcome != engine.TriggerCreated || !r.Ack.Reached() {
				t.Fatalf("trigger after the flush: %+v, %v", r, err)
			}
			if rs.hook.count("eval") != 1 || rs.hook.count("script call that ran") != 1 || rs.hook.count("wait") != 2 {
				t.Fatalf("sent %v, want the call again as EVAL, with a second WAIT", rs.hook.n)
			}
			if c.evalsha {
				return
			}
			rs.hook.reset()
			if r, err := f.s.Enqueue(f.ctx, ps[2]); err != nil || !r.Ack.Reached() {
				t.Fatalf("third trigger: %+v, %v", r, err)
			}
			if rs.hook.count("fcall") != 1 || rs.hook.count("eval") != 0 || rs.hook.count("wait") != 1 {
				t.Fatalf("third trigger sent %v, want one FCALL of the library loaded again and one WAIT", rs.hook.n)
			}
		})
	}
}
