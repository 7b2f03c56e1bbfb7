package redisstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// startTwoMasterCluster starts two redis-servers in cluster mode, the
// first serving slots 0-8191 and the second 8192-16383, and waits until
// both say the cluster is ok.
func startTwoMasterCluster(t *testing.T) (a, b *redistest.Server, ca, cb *redis.Client) {
	t.Helper()
	a = redistest.StartServer(t, "--cluster-enabled", "yes", "--appendonly", "no")
	b = redistest.StartServer(t, "--cluster-enabled", "yes", "--appendonly", "no")
	ca, cb = redis.NewClient(&redis.Options{Addr: a.Addr()}), redis.NewClient(&redis.Options{Addr: b.Addr()})
	t.Cleanup(func() { _ = ca.Close(); _ = cb.Close() })
	ctx := context.Background()
	for i, err := range []error{
		ca.Do(ctx, "cluster", "set-config-epoch", 1).Err(),
		cb.Do(ctx, "cluster", "set-config-epoch", 2).Err(),
		ca.Do(ctx, "cluster", "addslotsrange", 0, 8191).Err(),
		cb.Do(ctx, "cluster", "addslotsrange", 8192, 16383).Err(),
		ca.ClusterMeet(ctx, "127.0.0.1", b.Addr()[strings.LastIndex(b.Addr(), ":")+1:]).Err(),
	} {
		if err != nil {
			t.Fatalf("cluster setup step %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range []*redis.Client{ca, cb} {
		for {
			info, _ := c.ClusterInfo(ctx).Result()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:2") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the cluster did not become ok: %s", info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return a, b, ca, cb
}

// On a cluster, a durable trigger's pipeline goes to the master of its
// slot; when the slot has moved since the client read the cluster's map,
// that master answers MOVED, nothing runs, and the trigger is sent again to
// the new master, once: the run is created there, acknowledged, and exists
// nowhere else.
func TestDurableTriggerFollowsAMovedSlot(t *testing.T) {
	t.Parallel()
	a, b, ca, cb := startTwoMasterCluster(t)
	ctx := context.Background()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{a.Addr(), b.Addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	moved := &movedCounter{}
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(moved) })

	// A namespace whose slot the first master serves.
	var ns string
	var slot int64
	for i := 0; ; i++ {
		ns = redistest.Namespace(t)
		if s, err := ca.ClusterKeySlot(ctx, "taskq:{"+ns+"}:x").Result(); err == nil && s < 8192 {
			slot = s
			break
		}
		if i > 100 {
			t.Fatal("no namespace in the first master's slots")
		}
	}
	// One partition, so that every key of the namespace is in that slot
	// (a cluster's default is one per master).
	s := redisstore.NewPartitioned(cc, ns, 1)
	if _, err := s.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, &redistest.Backend{Client: cc, Namespace: ns})
	first := f.params("ship", "a", engine.StrategyStatus)
	first.Durability = engine.Durability{Replicas: 1, Timeout: 20 * time.Millisecond}
	if r, err := s.Enqueue(ctx, first); err != nil || r.Outcome != engine.TriggerCreated || r.Ack == nil {
		t.Fatalf("durable trigger on the first master: %+v, %v", r, err)
	}
	if n, _ := ca.Exists(ctx, f.k.Run(first.RunID)).Result(); n != 1 {
		t.Fatal("the run is not on the first master")
	}

	// Move the (then empty) slot to the second master behind the client's
	// back: its map still names the first.
	inSlot, err := ca.ClusterGetKeysInSlot(ctx, int(slot), 1000).Result()
	if err != nil || len(inSlot) == 0 {
		t.Fatalf("keys in slot %d: %v, %v", slot, inSlot, err)
	}
	if err := ca.Del(ctx, inSlot...).Err(); err != nil {
		t.Fatal(err)
	}
	bid, err := cb.Do(ctx, "cluster", "myid").Text()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*redis.Client{cb, ca} {
		if err := c.Do(ctx, "cluster", "setslot", slot, "node", bid).Err(); err != nil {
			t.Fatalf("move slot %d: %v", slot, err)
		}
	}

	p := f.params("ship", "b", engine.StrategyStatus)
	p.Durability = engine.Durability{Replicas: 1, Timeout: 20 * time.Millisecond}
	r, err := s.Enqueue(ctx, p)
	if err != nil || r.Outcome != engine.TriggerCreated || r.Ack == nil || r.Ack.Err != nil {
		t.Fatalf("durable trigger after the move: %+v, %v", r, err)
	}
	if moved.n.Load() == 0 {
		t.Fatal("no MOVED was answered: the client's map already named the new master")
	}
	if n, _ := cb.Exists(ctx, f.k.Run(p.RunID)).Result(); n != 1 {
		t.Fatal("the run is not on the slot's new master")
	}
	if n, _ := ca.Exists(ctx, f.k.Run(p.RunID)).Result(); n != 0 {
		t.Fatal("the run is on the slot's old master too")
	}
	if v, err := s.ServerVersion(ctx); err != nil || v == "" {
		t.Fatalf("the cluster's version: %q, %v", v, err)
	}
}

// movedCounter is a go-redis hook that counts the pipelined commands
// answered MOVED.
type movedCounter struct{ n atomic.Int64 }

func (h *movedCounter) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *movedCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *movedCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Err() != nil && strings.HasPrefix(c.Err().Error(), "MOVED ") {
				h.n.Add(1)
			}
		}
		return err
	}
}
