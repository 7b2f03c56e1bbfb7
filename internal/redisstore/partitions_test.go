package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// The slots Redis's documentation gives for these keys (CLUSTER KEYSLOT),
// hash tags included.
func TestSlotIsRedisClusterSlot(t *testing.T) {
	for key, want := range map[string]int{
		"123456789":     12739, // CRC16 XMODEM's check value, 0x31C3
		"somekey":       11058,
		"foo{hash_tag}": 2515,
		"{hash_tag}bar": 2515,
		"foo{}{bar}":    8363, // an empty tag: the whole key is hashed
		"foo{{bar}}zap": 4015, // the tag is "{bar"
		"foo{bar}{zap}": 5061, // the first tag: "bar"
	} {
		if got := redisstore.Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// Partition 0 is the home prefix whatever P; partition i >= 1 has a hash
// tag of its own, starting with the namespace, '#' and i, whose slot is in
// the range i after the home partition's of P equal ranges of the slots:
// every range holds one partition.
func TestPartitionPrefixes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 16, 100, engine.PartitionsMax} {
		seen := map[string]bool{}
		home := redisstore.HomeRange("orders", n)
		if s := redisstore.Slot("taskq:{orders}:x"); n > 1 && (s < home*16384/n || s >= (home+1)*16384/n) {
			t.Fatalf("P=%d: home slot %d not in its range %d", n, s, home)
		}
		for i := range n {
			p := redisstore.PartitionPrefix("orders", i, n)
			if i == 0 {
				if p != "taskq:{orders}:" {
					t.Fatalf("P=%d: partition 0 prefix %q, want the home prefix", n, p)
				}
				continue
			}
			tag := strings.TrimSuffix(strings.TrimPrefix(p, "taskq:{"), "}:")
			num, _, _ := strings.Cut(strings.TrimPrefix(tag, "orders#"), ".")
			if !strings.HasPrefix(tag, "orders#") || num != strconv.Itoa(i) || !strings.HasSuffix(p, "}:") {
				t.Fatalf("P=%d: partition %d prefix %q", n, i, p)
			}
			r := (home + i) % n
			lo, hi := r*16384/n, (r+1)*16384/n
			if s := redisstore.Slot(p + "run:x"); s < lo || s >= hi {
				t.Fatalf("P=%d: partition %d slot %d, want in [%d, %d)", n, i, s, lo, hi)
			}
			if seen[p] {
				t.Fatalf("P=%d: prefix %q twice", n, p)
			}
			seen[p] = true
		}
	}
}

func TestRunPartitionParsesIDs(t *testing.T) {
	for id, want := range map[string]int{
		"0190f1d2-7a6b-7cde-8f00-0123456789ab":    0,
		"0190f1d2-7a6b-7cde-8f00-0123456789ab.1":  1,
		"0190f1d2-7a6b-7cde-8f00-0123456789ab.15": 15,
		"run-7": 0,
		"":      0,
	} {
		if got, ok := engine.RunPartition(id); !ok || got != want {
			t.Errorf("RunPartition(%q) = %d, %v; want %d", id, got, ok, want)
		}
	}
	for _, id := range []string{"x.", "x.0", "x.01", "x.-1", "x.a", "x.1a", "x.9999999", "x.1 "} {
		if got, ok := engine.RunPartition(id); ok {
			t.Errorf("RunPartition(%q) = %d, true; want not ok", id, got)
		}
	}
	for _, part := range []int{0, 1, 7, 1023} {
		id := engine.InPartition("0190f1d2-7a6b-7cde-8f00-0123456789ab", part)
		if got, ok := engine.RunPartition(id); !ok || got != part {
			t.Errorf("RunPartition(InPartition(_, %d)) = %d, %v", part, got, ok)
		}
	}
	p := redisstore.NewPartitions("ns", 4)
	for id, want := range map[string]bool{"a": true, "a.3": true, "a.4": false, "a.x": false} {
		if _, ok := p.OfRun(id); ok != want {
			t.Errorf("OfRun(%q) ok = %v with 4 partitions, want %v", id, ok, want)
		}
	}
}

// A key's partition depends on the namespace and the key alone, and keys
// spread over the partitions.
func TestKeyPartitionSpreadsKeys(t *testing.T) {
	const n, keys = 8, 8000
	counts := make([]int, n)
	for i := range keys {
		k := fmt.Sprintf("order:%d", i)
		p := engine.KeyPartition("shop", k, n)
		if p != engine.KeyPartition("shop", k, n) || p < 0 || p >= n {
			t.Fatalf("KeyPartition(%q) = %d, unstable or out of range", k, p)
		}
		counts[p]++
	}
	for i, c := range counts {
		if c < keys/n*8/10 || c > keys/n*12/10 {
			t.Fatalf("partition %d got %d of %d keys: %v", i, c, keys, counts)
		}
	}
	if engine.KeyPartition("shop", "k", 1) != 0 {
		t.Fatal("one partition: key not in partition 0")
	}
}

func TestValidateNamespace(t *testing.T) {
	for _, ns := range []string{"default", "a", "Orders_v2.eu-west:1", strings.Repeat("x", 64)} {
		if err := engine.ValidateNamespace(ns); err != nil {
			t.Errorf("%q: %v", ns, err)
		}
	}
	for ns, problem := range map[string]string{
		"":                      "is empty",
		strings.Repeat("x", 65): "65 characters, over the limit of 64",
		"a{b}":                  `holds '{' at byte 1`,
		"a#1":                   `holds '#' at byte 1`,
		"a b":                   `holds ' '`,
		"é":                     "holds",
	} {
		err := engine.ValidateNamespace(ns)
		var ie *engine.InvalidNamespaceError
		if !errors.As(err, &ie) || !errors.Is(err, engine.ErrInvalidNamespace) || ie.Namespace != ns || !strings.Contains(err.Error(), problem) {
			t.Errorf("%q: %v, want an *InvalidNamespaceError saying %q", ns, err, problem)
		}
	}
}

// The first use of a namespace records its partition count; later opens
// adopt it, and one configured with another count is refused with an
// error naming both.
func TestPartitionsAreRecordedOnFirstUse(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		first, err := redisstore.NewPartitioned(b.Client, b.Namespace, 4).Partitions(ctx)
		if err != nil || first.Count() != 4 {
			t.Fatalf("first use with 4: %v, %v", first, err)
		}
		if v := b.Client.HGet(ctx, redisstore.NewKeys(b.Namespace).Meta(), "partitions").Val(); v != "4" {
			t.Fatalf("meta record holds %q", v)
		}
		adopted, err := redisstore.New(b.Client, b.Namespace).Partitions(ctx)
		if err != nil || adopted.Count() != 4 {
			t.Fatalf("unconfigured open: %v, %v; want the recorded 4", adopted, err)
		}
		same, err := redisstore.NewPartitioned(b.Client, b.Namespace, 4).Partitions(ctx)
		if err != nil || same.Count() != 4 {
			t.Fatalf("open with the same count: %v, %v", same, err)
		}
		_, err = redisstore.NewPartitioned(b.Client, b.Namespace, 8).Partitions(ctx)
		var mm *engine.PartitionsMismatchError
		if !errors.As(err, &mm) || !errors.Is(err, engine.ErrPartitionsMismatch) || mm.Configured != 8 || mm.Recorded != 4 ||
			!strings.Contains(err.Error(), "4") || !strings.Contains(err.Error(), "8") {
			t.Fatalf("open with 8: %v; want a *PartitionsMismatchError naming 8 and 4", err)
		}

		// A namespace never used records the default: 1 on a single node,
		// the number of masters on a cluster.
		fresh := b.Namespace + "-fresh"
		t.Cleanup(func() { redistest.DeleteNamespace(ctx, b.Client, fresh) })
		want := engine.PartitionsDefault
		if b.IsCluster() {
			want = mastersWithSlots(t, b.Client)
		}
		def, err := redisstore.New(b.Client, fresh).Partitions(ctx)
		if err != nil || def.Count() != want {
			t.Fatalf("fresh namespace: %v, %v; want %d", def, err, want)
		}
		if v := b.Client.HGet(ctx, redisstore.NewKeys(fresh).Meta(), "partitions").Val(); v != strconv.Itoa(want) {
			t.Fatalf("fresh namespace's meta record holds %q, want %d", v, want)
		}
		// A namespace recorded with another count keeps it: the default
		// applies to a namespace's first use only.
		kept := b.Namespace + "-kept"
		t.Cleanup(func() { redistest.DeleteNamespace(ctx, b.Client, kept) })
		if _, err := redisstore.NewPartitioned(b.Client, kept, 16).Partitions(ctx); err != nil {
			t.Fatal(err)
		}
		if p, err := redisstore.New(b.Client, kept).Partitions(ctx); err != nil || p.Count() != 16 {
			t.Fatalf("unconfigured open of a namespace recorded with 16: %v, %v", p, err)
		}

		// Data from before partitions: the namespace has 1.
		legacy := b.Namespace + "-old"
		t.Cleanup(func() { redistest.DeleteNamespace(ctx, b.Client, legacy) })
		b.Client.HSet(ctx, redisstore.NewKeys(legacy).Tasks(), "t", "{}")
		_, err = redisstore.NewPartitioned(b.Client, legacy, 4).Partitions(ctx)
		if !errors.As(err, &mm) || mm.Recorded != 1 {
			t.Fatalf("4 configured on a namespace with data from before partitions: %v", err)
		}
		old, err := redisstore.New(b.Client, legacy).Partitions(ctx)
		if err != nil || old.Count() != 1 {
			t.Fatalf("unconfigured open of a namespace with data: %v, %v", old, err)
		}

		// A record that is not a count is an error, not a guess.
		bad := b.Namespace + "-bad"
		t.Cleanup(func() { redistest.DeleteNamespace(ctx, b.Client, bad) })
		b.Client.HSet(ctx, redisstore.NewKeys(bad).Meta(), "partitions", "many")
		if _, err := redisstore.New(b.Client, bad).Partitions(ctx); err == nil || !strings.Contains(err.Error(), `"many"`) {
			t.Fatalf("meta record holding %q: %v", "many", err)
		}
	})
}

// The default is 1 on a single node, read without a call, and on a Redis
// Cluster the number of masters serving slots; a cluster that cannot be
// asked gives an error, not a guess.
func TestDefaultPartitionsByClient(t *testing.T) {
	ctx := context.Background()
	one := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	defer one.Close()
	if n, err := redisstore.DefaultPartitions(ctx, one); n != 1 || err != nil {
		t.Fatalf("single node: %d, %v", n, err)
	}
	gone := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, MaxRetries: -1})
	defer gone.Close()
	if n, err := redisstore.DefaultPartitions(ctx, gone); err == nil || !strings.Contains(err.Error(), "CLUSTER SHARDS") {
		t.Fatalf("unreachable cluster: %d, %v; want an error naming CLUSTER SHARDS", n, err)
	}
	b := redistest.Cluster(t)
	want := mastersWithSlots(t, b.Client)
	if os.Getenv(redistest.ClusterURLEnv) == "" && want != redistest.ClusterMasters {
		t.Fatalf("the harness's cluster has %d masters with slots, want %d", want, redistest.ClusterMasters)
	}
	if n, err := redisstore.DefaultPartitions(ctx, b.Client); err != nil || n != want {
		t.Fatalf("cluster: %d, %v; want its %d masters", n, err, want)
	}
	// What a cluster older than CLUSTER SHARDS answers counts the same.
	slots, err := b.Client.(*redis.ClusterClient).ClusterSlots(ctx).Result() //nolint:staticcheck // what a cluster before Redis 7.0 answers
	if err != nil {
		t.Fatal(err)
	}
	if n := redisstore.ClusterSlotMasters(slots); n != want {
		t.Fatalf("from CLUSTER SLOTS: %d masters, want %d", n, want)
	}
}

// ClusterMasters counts the shards that serve slots, each once however
// many slot ranges it serves and whatever its replicas; never less than
// one.
func TestClusterMastersCountsShardsWithSlots(t *testing.T) {
	master := func(id string) redis.Node { return redis.Node{ID: id, Role: "master", Health: "online"} }
	replica := func(id string) redis.Node { return redis.Node{ID: id, Role: "replica", Health: "online"} }
	for _, c := range []struct {
		name   string
		shards []redis.ClusterShard
		want   int
	}{
		{"no shards", nil, 1},
		{"one master", []redis.ClusterShard{{Slots: []redis.SlotRange{{Start: 0, End: 16383}}, Nodes: []redis.Node{master("a")}}}, 1},
		{"three masters with replicas", []redis.ClusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 5460}}, Nodes: []redis.Node{master("a"), replica("d")}},
			{Slots: []redis.SlotRange{{Start: 5461, End: 10922}}, Nodes: []redis.Node{master("b"), replica("e")}},
			{Slots: []redis.SlotRange{{Start: 10923, End: 16383}}, Nodes: []redis.Node{replica("f"), master("c")}},
		}, 3},
		{"a master serving two ranges after resharding", []redis.ClusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 99}, {Start: 8192, End: 16383}}, Nodes: []redis.Node{master("b")}},
			{Slots: []redis.SlotRange{{Start: 100, End: 8191}}, Nodes: []redis.Node{master("a")}},
		}, 2},
		{"a master added but given no slots yet", []redis.ClusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 16383}}, Nodes: []redis.Node{master("a")}},
			{Nodes: []redis.Node{master("b")}},
		}, 1},
	} {
		if n := redisstore.ClusterMasters(c.shards); n != c.want {
			t.Errorf("%s: %d masters, want %d", c.name, n, c.want)
		}
	}
}

// ClusterSlotMasters, for a cluster older than CLUSTER SHARDS, counts the
// distinct masters serving a slot range in CLUSTER SLOTS; never less than
// one.
func TestClusterSlotMastersCountsDistinctMasters(t *testing.T) {
	node := func(id string) redis.ClusterNode { return redis.ClusterNode{ID: id, Addr: id + ":6379"} }
	for _, c := range []struct {
		name  string
		slots []redis.ClusterSlot
		want  int
	}{
		{"no ranges", nil, 1},
		{"three masters with replicas", []redis.ClusterSlot{
			{Start: 0, End: 5460, Nodes: []redis.ClusterNode{node("a"), node("d")}},
			{Start: 5461, End: 10922, Nodes: []redis.ClusterNode{node("b"), node("e")}},
			{Start: 10923, End: 16383, Nodes: []redis.ClusterNode{node("c"), node("f")}},
		}, 3},
		{"a master serving two ranges after resharding", []redis.ClusterSlot{
			{Start: 0, End: 99, Nodes: []redis.ClusterNode{node("b")}},
			{Start: 100, End: 8191, Nodes: []redis.ClusterNode{node("a")}},
			{Start: 8192, End: 16383, Nodes: []redis.ClusterNode{node("b")}},
		}, 2},
	} {
		if n := redisstore.ClusterSlotMasters(c.slots); n != c.want {
			t.Errorf("%s: %d masters, want %d", c.name, n, c.want)
		}
	}
}

// mastersWithSlots counts the masters CLUSTER NODES lists with slots.
func mastersWithSlots(t *testing.T, rdb redis.UniversalClient) int {
	t.Helper()
	nodes, err := rdb.ClusterNodes(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) > 8 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") {
			n++
		}
	}
	return n
}

// With 4 partitions a run lives in its key's partition (so keys collide
// as with one), a run without a key in the partition its ID names, and
// every lookup by ID goes to that partition; an ID naming a partition the
// namespace lacks is a run that does not exist.
func TestRunsLiveInTheirPartition(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 4)
		parts, err := s.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		var ps []*engine.EnqueueParams
		for i := range 40 {
			p := &engine.EnqueueParams{RunID: fmt.Sprintf("0190f1d2-7a6b-7cde-8f00-%012d", i), Task: "t",
				Input: []byte(`{}`), Retention: time.Hour, Now: now, MaxDeliveries: 3}
			if i%2 == 0 {
				p.Key, p.Strategy, p.Hold = fmt.Sprint("k", i), engine.StrategyStatus, time.Hour
			}
			ps = append(ps, p)
		}
		res, errs := s.EnqueueBatch(ctx, ps)
		used := map[int]bool{}
		for i, p := range ps {
			if errs[i] != nil || !res[i].Accepted {
				t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
			}
			part, ok := parts.OfRun(p.RunID)
			if !ok {
				t.Fatalf("run ID %q names no partition", p.RunID)
			}
			used[part] = true
			if p.Key != "" && part != parts.OfKey(p.Key) {
				t.Fatalf("run %s of key %s in partition %d, its key's is %d", p.RunID, p.Key, part, parts.OfKey(p.Key))
			}
			if n := b.Client.Exists(ctx, parts.Keys(part).Run(p.RunID)).Val(); n != 1 {
				t.Fatalf("run %s not in partition %d", p.RunID, part)
			}
			if r, err := s.GetRun(ctx, p.RunID); err != nil || r.Status != engine.StatusQueued {
				t.Fatalf("GetRun(%s) = %+v, %v", p.RunID, r, err)
			}
		}
		if len(used) != 4 {
			t.Fatalf("40 runs used partitions %v, want all 4", used)
		}
		// A duplicate collides, in its key's partition.
		dup := &engine.EnqueueParams{RunID: "0190f1d2-7a6b-7cde-8f00-999999999999", Task: "t", Input: []byte(`{}`),
			Key: "k4", Strategy: engine.StrategyStatus, Hold: time.Hour, Retention: time.Hour, Now: now}
		if r, err := s.Enqueue(ctx, dup); err != nil || r.Accepted || r.Owner != ps[4].RunID {
			t.Fatalf("duplicate of k4: %+v, %v; want owner %s", r, err, ps[4].RunID)
		}
		if ks, held, err := s.GetKey(ctx, "k4"); err != nil || !held || ks.Owner != ps[4].RunID {
			t.Fatalf("GetKey(k4) = %+v, %v, %v", ks, held, err)
		}
		// Lookups of IDs naming no partition find nothing.
		for _, id := range []string{ps[1].RunID + ".4", "x.0", "x.y"} {
			if _, err := s.GetRun(ctx, id); !errors.Is(err, engine.ErrRunNotFound) {
				t.Fatalf("GetRun(%q) = %v, want ErrRunNotFound", id, err)
			}
			if res, err := s.Cancel(ctx, id, "r", now); err != nil || res.Status != "missing" {
				t.Fatalf("Cancel(%q) = %+v, %v", id, res, err)
			}
		}
		// A worker's path: every partition read, started and finished.
		if err := s.EnsureGroup(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		var ds []engine.Delivery
		for part := range 4 {
			got, err := s.ReadGroup(ctx, part, "w", []string{"t"}, 100, -1)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range got {
				if p, _ := parts.OfRun(d.RunID); p != part {
					t.Fatalf("partition %d delivered run %s of partition %d", part, d.RunID, p)
				}
			}
			ds = append(ds, got...)
		}
		if len(ds) != len(ps) {
			t.Fatalf("read %d deliveries from 4 partitions, want %d", len(ds), len(ps))
		}
		st, errs := s.StartBatch(ctx, "w", now, ds)
		fs := make([]*engine.FinishParams, len(ds))
		for i, d := range ds {
			if errs[i] != nil || !st[i].Started {
				t.Fatalf("start %s: %+v, %v", d.RunID, st[i], errs[i])
			}
			fs[i] = &engine.FinishParams{RunID: d.RunID, Attempt: st[i].Attempt, Outcome: engine.OutcomeSucceeded,
				Payload: []byte(`{}`), Now: now, Task: d.Task, EntryID: d.EntryID, Spec: st[i].Spec}
		}
		reps, err := s.Heartbeat(ctx, "t", "w", leases(ds, st))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range reps {
			if r.State != engine.LeaseHeld {
				t.Fatalf("heartbeat of %s: %+v", ds[i].RunID, r)
			}
		}
		fr, errs := s.FinishBatch(ctx, fs)
		for i := range fs {
			if errs[i] != nil || !fr[i].Written || fr[i].Status != engine.StatusSucceeded {
				t.Fatalf("finish %s: %+v, %v", fs[i].RunID, fr[i], errs[i])
			}
		}
		ids, err := s.ListRunIDs(ctx, 0, 100)
		if err != nil || len(ids) != len(ps) {
			t.Fatalf("ListRunIDs: %d, %v", len(ids), err)
		}
	})
}

func leases(ds []engine.Delivery, st []engine.StartResult) []engine.Lease {
	out := make([]engine.Lease, len(ds))
	for i, d := range ds {
		out[i] = engine.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st[i].Attempt}
	}
	return out
}
