package redistest

import (
	"context"
	"strings"
	"testing"
	"time"
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
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := rdb.MasterForKey(ctx, "k")
		if err == nil && m.Options().Addr != addr {
			if v, err := rdb.Get(ctx, "k").Result(); err == nil && v == "v" {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took over from %s: %v", addr, err)
		}
		rdb.ReloadState(ctx)
		time.Sleep(200 * time.Millisecond)
	}
}
