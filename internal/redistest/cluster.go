package redistest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterURLEnv names an existing Redis Cluster the tests share instead of
// the one the harness starts: a redis+cluster:// URL with one or more seed
// addresses (see redisstore.IsClusterURL).
const ClusterURLEnv = "TASKQ_TEST_REDIS_CLUSTER_URL"

// ClusterMasters and ClusterReplicas shape the cluster the harness starts:
// three masters, each with one replica, so that a durable trigger can wait
// for a replica and a master can fail over.
const (
	ClusterMasters  = 3
	ClusterReplicas = 1
)

// The cluster the tests of this process share: found or started once.
var sharedCluster struct {
	once sync.Once
	url  string
	err  error
}

// sharedClusterURL returns the URL of the cluster the tests of this process
// share: the one ClusterURLEnv names, else one the harness starts, tied to
// this process. When it starts one it sets ClusterURLEnv, so that child
// processes use the same cluster.
func sharedClusterURL() (string, error) {
	sharedCluster.once.Do(func() {
		if url := os.Getenv(ClusterURLEnv); url != "" {
			sharedCluster.url = url
			return
		}
		sharedCluster.url, sharedCluster.err = startSharedCluster()
		if sharedCluster.err == nil {
			_ = os.Setenv(ClusterURLEnv, sharedCluster.url)
		}
	})
	return sharedCluster.url, sharedCluster.err
}

// Cluster connects to the Redis Cluster the tests share, with a namespace
// of the test's own, and deletes every key of that namespace on every
// master when the test ends. The test fails if any call on the client was
// refused for touching more than one slot (see SlotErrors). The cluster is
// the one ClusterURLEnv names, else three masters and three replicas the
// harness starts on free loopback ports for this test binary, which end
// with it.
func Cluster(t testing.TB) *Backend {
	t.Helper()
	CaptureLibraryLog(t)
	url, err := sharedClusterURL()
	if err != nil {
		t.Fatal(err)
	}
	rdb, err := ClusterClient(url)
	if err != nil {
		t.Fatalf("redistest: %s: %v", ClusterURLEnv, err)
	}
	slots := &SlotErrors{}
	rdb.AddHook(slots)
	ns := Namespace(t)
	t.Cleanup(func() {
		DeleteNamespace(context.Background(), rdb, ns)
		_ = rdb.Close()
		// After the test's own cleanups (registered later, run first),
		// which stop what it started on this client.
		if seen := slots.Seen(); len(seen) > 0 {
			t.Errorf("redistest: %d calls touched more than one cluster slot:\n%s", len(seen), strings.Join(seen, "\n"))
		}
	})
	return &Backend{Name: "cluster", Client: rdb, Namespace: ns, URL: url, slots: slots}
}

// ClusterClient returns a go-redis cluster client for a redis+cluster://
// URL (seeds separated by commas).
func ClusterClient(url string) (*redis.ClusterClient, error) {
	rest, ok := strings.CutPrefix(url, "redis+cluster://")
	if !ok {
		return nil, fmt.Errorf("%q is not a redis+cluster:// URL", url)
	}
	hosts, _, _ := strings.Cut(rest, "/")
	hosts, _, _ = strings.Cut(hosts, "?")
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(hosts, ","), PoolSize: ClusterPoolSize}), nil
}

// ClusterPoolSize is the connection pool per node of a cluster backend's
// client. Tests run several workers and clients on one client, and each
// worker holds a connection per partition on that partition's master for
// its blocking read: go-redis's default (5 per core) would leave their
// other calls waiting for a connection until their leases lapse.
const ClusterPoolSize = 64

// startSharedCluster starts ClusterMasters × (1 + ClusterReplicas)
// redis-servers tied to this process and forms a cluster of them.
func startSharedCluster() (string, error) {
	for _, tool := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("redistest: %s is not installed: %s, or set %s", tool, InstallHint, ClusterURLEnv)
		}
	}
	removeStaleClusterDirs()
	var last error
	for try := 0; try < 3; try++ { // another process may take a free port first
		addrs := make([]string, 0, ClusterMasters*(1+ClusterReplicas))
		for range cap(addrs) {
			port, bus, err := freePortPair()
			if err != nil {
				return "", err
			}
			dir := filepath.Join(os.TempDir(), fmt.Sprintf("taskq-cluster-%d-%d", os.Getpid(), port))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return "", err
			}
			if _, err := startTiedServer(port, dir, clusterArgs(bus)...); err != nil {
				last = err
				break
			}
			addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", port))
		}
		if len(addrs) < cap(addrs) {
			continue
		}
		if err := FormCluster(addrs, ClusterReplicas); err != nil {
			return "", err
		}
		return "redis+cluster://" + strings.Join(addrs, ","), nil
	}
	return "", fmt.Errorf("redistest: could not start the cluster's servers: %w", last)
}

// clusterArgs are the config args of a cluster node whose bus listens on
// port bus: the bus port is given, not port+10000, which may be past 65535
// for a free port taken at random.
func clusterArgs(bus int) []string {
	return []string{"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
		"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
		"--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0"}
}

// removeStaleClusterDirs removes the node directories of shared clusters
// whose test binary has ended.
func removeStaleClusterDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "taskq-cluster-*-*"))
	for _, d := range dirs {
		f := strings.Split(filepath.Base(d), "-")
		pid, err := strconv.Atoi(f[2])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			_ = os.RemoveAll(d)
		}
	}
}

// freePortPair returns two loopback ports free at the time of the call.
func freePortPair() (int, int, error) {
	a, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	for {
		b, err := freePort()
		if err != nil {
			return 0, 0, err
		}
		if b != a {
			return a, b, nil
		}
	}
}

// FormCluster makes a cluster of the empty cluster-mode servers at addrs
// with redis-cli --cluster create, replicas replicas per master, and waits
// until every node says cluster_state:ok, knows every other, and every
// replica has synced with its master.
func FormCluster(addrs []string, replicas int) error {
	args := append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	cmd := exec.Command("redis-cli", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("redistest: redis-cli --cluster create: %w: %s", err, oneLine(out.String()))
	}
	return WaitClusterOK(addrs, len(addrs)/(1+replicas), 60*time.Second)
}

// WaitClusterOK waits until every node at addrs says cluster_state:ok and
// sees masters masters and the rest of addrs as their replicas, and every
// replica has synced with its master. (redis-cli makes the replicas after
// it has assigned the slots, so a cluster is ok before it has them.)
func WaitClusterOK(addrs []string, masters int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for _, a := range addrs {
		c := redis.NewClient(&redis.Options{Addr: a})
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			info, err := c.ClusterInfo(ctx).Result()
			nodes, nerr := c.ClusterNodes(ctx).Result()
			repl, rerr := c.Info(ctx, "replication").Result()
			cancel()
			if err == nil && nerr == nil && rerr == nil && strings.Contains(info, "cluster_state:ok") &&
				countRoles(nodes, "master") == masters && countRoles(nodes, "slave") == len(addrs)-masters &&
				(strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return fmt.Errorf("redistest: the cluster node at %s is not ready within %s: %w %s", a, within, err, oneLine(info))
			}
			time.Sleep(50 * time.Millisecond)
		}
		_ = c.Close()
	}
	return nil
}

// PrivateCluster is a Redis Cluster of the test's own, for fault tests
// that kill or pause its nodes: never the shared one.
type PrivateCluster struct {
	// Nodes are its servers, in the order redis-cli was given them: the
	// first Masters are the masters it made.
	Nodes   []*Server
	Masters int
}

// StartCluster starts a cluster of masters masters with replicas replicas
// each, every node a redis-server of the test's own on free loopback
// ports (with extra config args), and waits until it is ready. The nodes
// are stopped when the test ends.
func StartCluster(t testing.TB, masters, replicas int, extra ...string) *PrivateCluster {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Fatalf("redistest: redis-cli is not installed: %s", InstallHint)
	}
	pc := &PrivateCluster{Masters: masters}
	addrs := make([]string, 0, masters*(1+replicas))
	for range masters * (1 + replicas) {
		s := startServer(t, nil, func() []string {
			bus, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			return append(append(clusterArgs(bus), "--appendonly", "no"), extra...)
		})
		pc.Nodes = append(pc.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	if err := FormCluster(addrs, replicas); err != nil {
		t.Fatal(err)
	}
	return pc
}

// Addrs are the nodes' host:port addresses.
func (pc *PrivateCluster) Addrs() []string {
	out := make([]string, len(pc.Nodes))
	for i, n := range pc.Nodes {
		out[i] = n.Addr()
	}
	return out
}

// URL is the cluster's redis+cluster:// URL, every node a seed.
func (pc *PrivateCluster) URL() string { return "redis+cluster://" + strings.Join(pc.Addrs(), ",") }

// Client returns a cluster client of the test's own, closed when the test
// ends.
func (pc *PrivateCluster) Client(t testing.TB) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: pc.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// countRoles counts the nodes with flag role ("master", "slave") in a
// CLUSTER NODES reply.
func countRoles(nodes, role string) int {
	n := 0
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		for _, flag := range strings.Split(f[2], ",") {
			if flag == role {
				n++
			}
		}
	}
	return n
}
