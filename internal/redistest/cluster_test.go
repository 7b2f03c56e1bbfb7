package redistest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The shared cluster has ClusterMasters masters, each with ClusterReplicas
// replicas, all slots served; a test's keys are gone from every master
// once the test ends.
func TestClusterIsThreeMastersWithReplicas(t *testing.T) {
	ctx := context.Background()
	var b *Backend
	var keys []string
	t.Run("use", func(t *testing.T) {
		b = Cluster(t)
		if b.Name != "cluster" || !b.Real() || !strings.HasPrefix(b.URL, "redis+cluster://") {
			t.Fatalf("backend %s, URL %q", b.Name, b.URL)
		}
		for i := range 20 { // spread over the slots, so over every master
			k := "taskq:{" + b.Namespace + "#" + string(rune('a'+i)) + "}:x"
			if err := b.Client.Set(ctx, k, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
	})
	rdb, err := ClusterClient(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	nodes, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	masters, replicas := countRoles(nodes, "master"), countRoles(nodes, "slave")
	if masters != ClusterMasters || replicas != ClusterMasters*ClusterReplicas {
		t.Fatalf("%d masters and %d replicas, want %d and %d", masters, replicas, ClusterMasters, ClusterMasters*ClusterReplicas)
	}
	for _, k := range keys {
		if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Fatalf("%s outlived its test: %d, %v", k, n, err)
		}
	}
}

// A private cluster's nodes are the test's own; killing a master makes its
// replica take over its slots.
func TestPrivateClusterFailsOver(t *testing.T) {
	t.Parallel()
	pc := StartCluster(t, 3, 1)
	rdb := pc.Client(t)
	ctx := context.Background()
	if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := rdb.MasterForKey(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	// The write on the replica too before the kill: replication is
	// asynchronous, and a key lost with its master would read as nil from
	// the promoted one, however well the client followed.
	if n, err := master.Do(ctx, "wait", 1, 5000).Int(); err != nil || n != 1 {
		t.Fatalf("WAIT for the replica: %d, %v", n, err)
	}
	addr := master.Options().Addr
	var victim *Server
	for _, n := range pc.Nodes {
		if n.Addr() == addr {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("no node at %s", addr)
	}
	victim.Kill()
	// First what the cluster says: a surviving node sees the victim failed
	// and another master serving its slots. The election waits out the
	// node timeout and may need a second round on a loaded machine.
	var witness *Server
	for _, n := range pc.Nodes {
		if n != victim {
			witness = n
			break
		}
	}
	wc := redis.NewClient(&redis.Options{Addr: witness.Addr()})
	defer wc.Close()
	slot, err := wc.ClusterKeySlot(ctx, "k").Result()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	var nodes string
	for {
		nodes, err = wc.ClusterNodes(ctx).Result()
		if err == nil && servedByOtherThan(nodes, int(slot), addr) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took over from %s within 90s: %v\n%s", addr, err, nodes)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Then the client follows it.
	deadline = time.Now().Add(30 * time.Second)
	for {
		m, err := rdb.MasterForKey(ctx, "k")
		if err == nil && m.Options().Addr != addr {
			v, gerr := rdb.Get(ctx, "k").Result()
			if gerr == nil && v == "v" {
				return
			}
			err = gerr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the client did not follow the promotion: %v\n%s", err, nodes)
		}
		rdb.ReloadState(ctx)
		time.Sleep(200 * time.Millisecond)
	}
}

// servedByOtherThan reports whether a CLUSTER NODES reply shows slot
// served by a connected master other than the one at addr.
func servedByOtherThan(nodes string, slot int, addr string) bool {
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || strings.HasPrefix(f[1], addr+"@") || !strings.Contains(f[2], "master") ||
			strings.Contains(f[2], "fail") || f[7] != "connected" {
			continue
		}
		for _, r := range f[8:] {
			lo, hi, found := strings.Cut(r, "-")
			if !found {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil && slot >= a && slot <= b {
				return true
			}
		}
	}
	return false
}

// SlotErrors sees every way a cluster refuses a call across slots: a
// script's KEYS in two slots, a script reaching an undeclared key on
// another node, a multi-key command, a transaction across slots; and not
// a pipeline of single-slot calls in several slots.
func TestSlotErrorsSeeCallsAcrossSlots(t *testing.T) {
	b := Cluster(t)
	rdb, err := ClusterClient(b.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	slots := &SlotErrors{}
	rdb.AddHook(slots)
	ctx := context.Background()
	// Two keys on different masters, only read: the slots of tags "a" and
	// "b" (15495 and 3300) are in the last and the first of three ranges.
	a, other := "{a}x", "{b}x"
	if err := rdb.Eval(ctx, "return redis.call('get', KEYS[2])", []string{a, other}).Err(); !IsSlotError(err) {
		t.Fatalf("script with KEYS in two slots: %v", err)
	}
	if err := rdb.Eval(ctx, "return redis.call('get', ARGV[1])", []string{a}, other).Err(); !IsSlotError(err) {
		t.Fatalf("script reaching a key on another node: %v", err)
	}
	if err := rdb.Do(ctx, "exists", a, other).Err(); !IsSlotError(err) {
		t.Fatalf("EXISTS of two slots: %v", err)
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, a)
		p.Get(ctx, other)
		return nil
	})
	if !IsSlotError(err) {
		t.Fatalf("transaction across slots: %v", err)
	}
	if n := len(slots.Seen()); n != 4 {
		t.Fatalf("%d refusals seen, want 4: %q", n, slots.Seen())
	}
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, a)
		p.Get(ctx, other)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if n := len(slots.Seen()); n != 4 {
		t.Fatalf("a pipeline of single-slot calls was counted: %q", slots.Seen())
	}
}

// A server whose port another process's Redis holds exits as it starts,
// and is reported so, not taken for the other server; StartServer then
// starts it on another port.
func TestServerOnATakenPortIsNotTheOtherServer(t *testing.T) {
	t.Parallel()
	other := StartServer(t)
	s := &Server{t: t, Port: other.Port, Dir: t.TempDir()}
	s.Args = []string{"--port", strconv.Itoa(other.Port), "--bind", "127.0.0.1", "--dir", s.Dir, "--save", "", "--appendonly", "no"}
	err := s.start()
	if !errors.Is(err, errExitedAtStart) {
		t.Fatalf("start on a taken port: %v; want errExitedAtStart", err)
	}
	if pid, err := serverPID(other.Addr()); err != nil || pid != other.Pid() {
		t.Fatalf("the other server: pid %d, %v; want %d", pid, err, other.Pid())
	}
}
