package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// mastersOf returns the masters that serve the partitions of s, each named
// by its address, and the partitions each serves.
func mastersOf(t *testing.T, cc *redis.ClusterClient, s *redisstore.Store) map[string][]int {
	t.Helper()
	ctx := context.Background()
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for p := range parts.Count() {
		m, err := cc.MasterForKey(ctx, parts.Keys(p).Run("x"))
		if err != nil {
			t.Fatal(err)
		}
		out[m.Options().Addr] = append(out[m.Options().Addr], p)
	}
	return out
}

// On a cluster a batch across every partition goes out as one call per
// master, of the script's multi function, each carrying the items of every
// partition that master serves; each item gets its own reply: a second
// batch of the same keys, in another order, meets the runs the first
// created, each its own.
func TestBatchIsOneCallPerMasterOnACluster(t *testing.T) {
	t.Parallel()
	b := redistest.Cluster(t)
	log := newScriptLog()
	b.Client.AddHook(log)
	f := newFixture(t, b)
	s := redisstore.NewPartitioned(b.Client, b.Namespace+"-multi", 16)
	masters := mastersOf(t, b.Client.(*redis.ClusterClient), s)
	if len(masters) < 2 {
		t.Fatalf("16 partitions on %d masters", len(masters))
	}
	keys := make([]string, 96)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	first := f.statusRuns("multi", keys...)
	res, errs := s.EnqueueBatch(f.ctx, first)
	touched := map[int]bool{}
	parts, _ := s.Partitions(f.ctx)
	for i, p := range first {
		if errs[i] != nil || res[i].Outcome != engine.TriggerCreated {
			t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
		}
		part, _ := parts.OfRun(p.RunID)
		touched[part] = true
	}
	if len(touched) < 8 {
		t.Fatalf("96 keys touched only %d partitions", len(touched))
	}
	calls := log.take()
	multi := 0
	for _, c := range calls {
		if c.script != "enqueue" || !c.ran {
			t.Errorf("call %+v", c)
		}
		multi++
	}
	if multi != len(masters) {
		t.Errorf("%d enqueue calls for a batch over %d masters, want one each: %+v", multi, len(masters), calls)
	}

	// The same keys backwards: each trigger meets the run its key's first
	// trigger created.
	again := make([]*engine.EnqueueParams, len(keys))
	for i := range keys {
		again[i] = f.params("multi", keys[len(keys)-1-i], engine.StrategyStatus)
	}
	res, errs = s.EnqueueBatch(f.ctx, again)
	for i := range again {
		want := first[len(keys)-1-i].RunID
		if errs[i] != nil || res[i].Outcome == engine.TriggerCreated || res[i].Owner != want {
			t.Errorf("trigger %d again (key %s): %+v, %v; want the owner %s", i, again[i].Key, res[i], errs[i], want)
		}
	}
	if n := len(log.take()); n != len(masters) {
		t.Errorf("%d calls for the second batch, want %d", n, len(masters))
	}
}

// multiCall packs calls, each the KEYS and ARGV of one call of a script,
// into the arguments of one call of its multi function, as the store does
// (see lua/lib/multi.lua).
func multiCall(calls ...[2][]any) ([]string, []any) {
	args := []any{len(calls)}
	for _, c := range calls {
		args = append(args, len(c[0]), len(c[1]))
		args = append(append(args, c[0]...), c[1]...)
	}
	return []string{calls[0][0][0].(string)}, args
}

func enqueueCall(s *redisstore.Store, p *engine.EnqueueParams) [2][]any {
	keys, args := s.EnqueueCall(p)
	k := make([]any, len(keys))
	for i, key := range keys {
		k[i] = key
	}
	return [2][]any{k, args}
}

// The multi function runs each call it carries as if sent alone, in order,
// and replies with each call's reply; a call that fails gives its error in
// its place, prefixed TASKQ_CALL, and the calls after it still run.
func TestMultiFunctionRunsEachCallAsAlone(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	f := newFixture(t, b)
	f.enqueue(f.params("m", "warm", engine.StrategyStatus)) // loads the library
	p1, p2, p3 := f.params("m", "a", engine.StrategyStatus), f.params("m", "b", engine.StrategyStatus), f.params("m", "a", engine.StrategyStatus)
	c1, c2, c3 := enqueueCall(f.s, p1), enqueueCall(f.s, p2), enqueueCall(f.s, p3)
	// The trigger count (ARG_TRIGGERS) no number: the script raises.
	c2[1] = append([]any(nil), c2[1]...)
	c2[1][4] = "x"
	keys, args := multiCall(c1, c2, c3)
	v, err := b.Client.FCall(f.ctx, redisstore.MultiFunction("enqueue"), keys, args...).Result()
	if err != nil {
		t.Fatal(err)
	}
	r, ok := v.([]any)
	if !ok || len(r) != 3 {
		t.Fatalf("reply %#v, want three", v)
	}
	got := redisstore.EnqueueReplies(r[0].([]any))
	if len(got) != 1 || fmt.Sprint(got[0].([]any)[0]) != "1" {
		t.Errorf("first call: %v, want the run created", r[0])
	}
	e, ok := r[1].(error)
	if !ok || !strings.HasPrefix(e.Error(), "TASKQ_CALL ") || strings.HasPrefix(redisstore.MultiCallError(e).Error(), "TASKQ_CALL") {
		t.Errorf("second call: %#v, want its error prefixed TASKQ_CALL", r[1])
	}
	// The third, of the first's key, meets the run the first created.
	got = redisstore.EnqueueReplies(r[2].([]any))
	if len(got) != 1 || fmt.Sprint(got[0].([]any)[1]) != p1.RunID {
		t.Errorf("third call: %v, want a collision with %s", r[2], p1.RunID)
	}
	if n := b.Client.Exists(f.ctx, f.k.Run(p1.RunID), f.k.Run(p2.RunID), f.k.Run(p3.RunID)).Val(); n != 1 {
		t.Errorf("%d of the three runs exist, want the first only", n)
	}
}

// On a cluster the multi function refuses, before it writes anything, to
// run calls of which one is in a slot another node serves.
func TestMultiFunctionRefusesANonLocalSlotBeforeWriting(t *testing.T) {
	t.Parallel()
	a, b, ca, _ := startTwoMasterCluster(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr(), b.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	// A namespace of four partitions, some on each master.
	ns := redistest.Namespace(t)
	s := redisstore.NewPartitioned(cc, ns, 4)
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &redistest.Backend{Client: cc, Namespace: ns + "-f"})
	f.enqueue(f.params("m", "warm", engine.StrategyStatus)) // loads the library
	local, remote := "", ""
	for i := 0; local == "" || remote == ""; i++ {
		if i > 1000 {
			t.Fatal("no keys on both masters")
		}
		k := fmt.Sprint("k", i)
		slot := ca.ClusterKeySlot(ctx, parts.Keys(parts.OfKey(k)).Run("x")).Val()
		if slot < 8192 && local == "" {
			local = k
		} else if slot >= 8192 && remote == "" {
			remote = k
		}
	}
	p1, p2 := f.params("m", local, engine.StrategyStatus), f.params("m", remote, engine.StrategyStatus)
	c1, c2 := enqueueCall(s, p1), enqueueCall(s, p2)
	before := ca.DBSize(ctx).Val()
	keys, args := multiCall(c1, c2)
	err = ca.FCall(ctx, redisstore.MultiFunction("enqueue"), keys, args...).Err()
	if err == nil || !strings.HasPrefix(err.Error(), "TASKQ_NOTLOCAL ") {
		t.Fatalf("a call with another node's slot: %v, want TASKQ_NOTLOCAL", err)
	}
	part, _ := parts.OfRun(p1.RunID)
	if n := ca.Exists(ctx, parts.Keys(part).Run(p1.RunID)).Val(); n != 0 {
		t.Fatal("the first call's run was written")
	}
	if after := ca.DBSize(ctx).Val(); after != before {
		t.Fatalf("a refused call wrote: %d keys before, %d after", before, after)
	}
	// Carried alone, the first call runs there.
	keys, args = multiCall(c1)
	if err := ca.FCall(ctx, redisstore.MultiFunction("enqueue"), keys, args...).Err(); err != nil {
		t.Fatal(err)
	}
	if n := ca.Exists(ctx, parts.Keys(part).Run(p1.RunID)).Val(); n != 1 {
		t.Fatal("the first call carried alone wrote no run")
	}
}

// errLog is a go-redis hook that records the errors of pipelined
// commands.
type errLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (l *errLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (l *errLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, c := range cmds {
			if c.Err() != nil {
				l.errs = append(l.errs, c.Err().Error())
			}
		}
		return err
	}
}

// When a partition's slot moved to another master behind the client's back
// (migrated with its keys), the multi call to its old master is refused
// before it writes and the batch goes out one call per partition: every
// new trigger creates its run once, on the slot's master, and every
// trigger of a key triggered before the move meets its run.
func TestBatchFollowsASlotMovedUnderAMultiCall(t *testing.T) {
	t.Parallel()
	a, b, ca, cb := startTwoMasterCluster(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr(), b.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	errs := &errLog{}
	cc.AddHook(errs)
	// A namespace with a partition other than the home one on the first
	// master, and a second there that a batch carries with it.
	var (
		ns    string
		s     *redisstore.Store
		parts *redisstore.Partitions
		moved = -1
	)
	for i := 0; moved < 0; i++ {
		if i > 100 {
			t.Fatal("no namespace with two partitions besides the home one on the first master")
		}
		ns = redistest.Namespace(t)
		s = redisstore.NewPartitioned(cc, ns, 8)
		var err error
		if parts, err = s.Partitions(ctx); err != nil {
			t.Fatal(err)
		}
		var onA []int
		for p := 1; p < parts.Count(); p++ {
			if ca.ClusterKeySlot(ctx, parts.Keys(p).Run("x")).Val() < 8192 {
				onA = append(onA, p)
			}
		}
		if len(onA) >= 2 {
			moved = onA[0]
		}
	}
	f := newFixture(t, &redistest.Backend{Client: cc, Namespace: ns + "-f"})
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("k", i)
	}
	first := f.statusRuns("m", keys...)
	if _, errs := s.EnqueueBatch(ctx, first); errors.Join(errs...) != nil {
		t.Fatal(errs)
	}
	inMoved := 0
	for _, p := range first {
		if q, _ := parts.OfRun(p.RunID); q == moved {
			inMoved++
		}
	}
	if inMoved == 0 {
		t.Fatalf("no trigger in partition %d", moved)
	}

	// Migrate the partition's slot, keys and all, to the second master.
	slot := int(ca.ClusterKeySlot(ctx, parts.Keys(moved).Run("x")).Val())
	aid, bid := ca.Do(ctx, "cluster", "myid").Val(), cb.Do(ctx, "cluster", "myid").Val()
	host, port, _ := strings.Cut(b.Addr(), ":")
	steps := []error{
		cb.Do(ctx, "cluster", "setslot", slot, "importing", aid).Err(),
		ca.Do(ctx, "cluster", "setslot", slot, "migrating", bid).Err(),
	}
	inSlot := ca.ClusterGetKeysInSlot(ctx, slot, 10000).Val()
	if len(inSlot) == 0 {
		t.Fatalf("no keys in slot %d", slot)
	}
	margs := []any{"migrate", host, port, "", 0, 5000, "keys"}
	for _, k := range inSlot {
		margs = append(margs, k)
	}
	steps = append(steps, ca.Do(ctx, margs...).Err(),
		cb.Do(ctx, "cluster", "setslot", slot, "node", bid).Err(),
		ca.Do(ctx, "cluster", "setslot", slot, "node", bid).Err())
	for i, err := range steps {
		if err != nil {
			t.Fatalf("migration step %d: %v", i, err)
		}
	}

	// The same keys again, and as many new ones.
	var again []*engine.EnqueueParams
	for _, k := range keys {
		again = append(again, f.params("m", k, engine.StrategyStatus), f.params("m", "new-"+k, engine.StrategyStatus))
	}
	res, rerrs := s.EnqueueBatch(ctx, again)
	for i, p := range again {
		if rerrs[i] != nil {
			t.Fatalf("trigger %d (key %s): %v", i, p.Key, rerrs[i])
		}
		if i%2 == 0 {
			if want := first[i/2].RunID; res[i].Outcome == engine.TriggerCreated || res[i].Owner != want {
				t.Errorf("trigger of %s again: %+v, want its run %s", p.Key, res[i], want)
			}
			continue
		}
		if res[i].Outcome != engine.TriggerCreated {
			t.Errorf("new trigger of %s: %+v", p.Key, res[i])
		}
		q, _ := parts.OfRun(p.RunID)
		onA, onB := ca.Exists(ctx, parts.Keys(q).Run(p.RunID)).Val(), cb.Exists(ctx, parts.Keys(q).Run(p.RunID)).Val()
		if q == moved && (onA != 0 || onB != 1) {
			t.Errorf("run %s of the moved partition: on the first master %d, on the second %d; want the second only", p.RunID, onA, onB)
		}
		if onA+onB != 1 {
			t.Errorf("run %s exists %d times", p.RunID, onA+onB)
		}
	}
	refused := false
	errs.mu.Lock()
	for _, e := range errs.errs {
		refused = refused || strings.HasPrefix(e, "TASKQ_NOTLOCAL ")
	}
	errs.mu.Unlock()
	if !refused {
		t.Errorf("no multi call was refused for the moved slot; errors seen: %v", errs.errs)
	}
}
