// Package redistest gives tests their own Redis: a namespace of their own on
// the real server the tests share (cleaned up after the test), an
// in-process miniredis, or a private redis-server process for fault tests.
//
// The shared server is found or started once per test binary: the one
// TASKQ_TEST_REDIS_URL names, else a Redis answering at 127.0.0.1:6379,
// else a redis-server the harness starts on a free loopback port, which
// ends with the test binary however it ends. go-redis's own log goes into
// the test log (see CaptureLibraryLog).
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// URLEnv names the real Redis tests share (a redis:// URL). Unset, Real
// uses 127.0.0.1:6379 if a Redis answers there, or starts one of its own.
const URLEnv = "TASKQ_TEST_REDIS_URL"

// Backend is a Redis a test runs against.
type Backend struct {
	Name      string
	Client    redis.UniversalClient
	Namespace string
	// URL is the server's redis:// URL, for a client of another process.
	URL string
	// Mini is set for miniredis backends; tests use it to move time.
	Mini *miniredis.Miniredis
	// slots, on a cluster backend, records calls refused for touching two
	// slots, on Client and on every client NewClient makes.
	slots *SlotErrors
}

// NewClient returns a client of its own to the backend's server, of the
// same kind and with the same options as Client, for a test that adds
// hooks to it or closes it; it is closed when the test ends.
func (b *Backend) NewClient(t testing.TB) redis.UniversalClient {
	t.Helper()
	var rdb redis.UniversalClient
	switch c := b.Client.(type) {
	case *redis.ClusterClient:
		cc := redis.NewClusterClient(c.Options())
		if b.slots != nil {
			cc.AddHook(b.slots)
		}
		rdb = cc
	case *redis.Client:
		rdb = redis.NewClient(c.Options())
	default:
		t.Fatalf("redistest: backend %s: a client of type %T", b.Name, b.Client)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Real reports whether the backend is a real Redis server (one node or a
// cluster).
func (b *Backend) Real() bool { return b.Mini == nil }

// IsCluster reports whether the backend is a Redis Cluster, whose client
// is a *redis.ClusterClient and whose keys are spread over its masters.
func (b *Backend) IsCluster() bool {
	_, ok := b.Client.(*redis.ClusterClient)
	return ok
}

// Advance moves time forward: FastForward on miniredis, a sleep on a real
// server (whose clock cannot be moved).
func (b *Backend) Advance(d time.Duration) {
	if b.Mini != nil {
		b.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

// Namespace returns a namespace unique to this test, a valid namespace
// name whatever the test's name holds.
func Namespace(t testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := strings.Map(func(r rune) rune {
		if r < 128 && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:-", r)) {
			return r
		}
		return '-'
	}, t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "t-" + name + "-" + hex.EncodeToString(b)
}

// Real connects to the real Redis the tests share, with a namespace of the
// test's own, and deletes every key of that namespace when the test ends.
// The server is the one URLEnv names (which must answer), else one
// answering at 127.0.0.1:6379, else a private redis-server the harness
// starts on a free loopback port for this test binary and that ends with
// it; when redis-server is not installed the test fails saying how to
// install it.
func Real(t testing.TB) *Backend {
	t.Helper()
	CaptureLibraryLog(t)
	url, err := sharedURL()
	if err != nil {
		t.Fatal(err)
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: %s: %v", URLEnv, err)
	}
	rdb := redis.NewClient(opt)
	ns := Namespace(t)
	t.Cleanup(func() {
		DeleteNamespace(context.Background(), rdb, ns)
		_ = rdb.Close()
	})
	return &Backend{Name: "redis", Client: rdb, Namespace: ns, URL: url}
}

// DeleteNamespace removes every key of namespace ns, in all its
// partitions, with SCAN and UNLINK: on every master of a cluster.
func DeleteNamespace(ctx context.Context, rdb redis.UniversalClient, ns string) {
	keys, _ := NamespaceKeys(ctx, rdb, ns)
	// One UNLINK per key, in one pipeline: the keys of several partitions
	// are in several slots.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Unlink(ctx, k)
		}
		return nil
	})
}

// NamespaceKeys returns every key of namespace ns, in all its partitions:
// on every master of a cluster.
func NamespaceKeys(ctx context.Context, rdb redis.UniversalClient, ns string) ([]string, error) {
	// redisstore.NamespacePatterns, which this package cannot import (the
	// store's own tests import this package): the home partition and the
	// others.
	var all []string
	for _, pattern := range []string{"taskq:{" + ns + "}:*", "taskq:{" + ns + "#*"} {
		keys, err := Keys(ctx, rdb, pattern)
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
	}
	return all, nil
}

// Keys returns every key that matches pattern, found with SCAN: on every
// master of a cluster, where KEYS or SCAN would see one node's keys only.
func Keys(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return scanNode(ctx, rdb, pattern)
	}
	var (
		mu   sync.Mutex
		keys []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ks, err := scanNode(ctx, m, pattern)
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, ks...)
		return err
	})
	return keys, err
}

// scanNode returns the keys of one node that match pattern.
func scanNode(ctx context.Context, rdb redis.UniversalClient, pattern string) ([]string, error) {
	var keys []string
	var cursor uint64
	for {
		ks, next, err := rdb.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return keys, err
		}
		keys = append(keys, ks...)
		if cursor = next; cursor == 0 {
			return keys, nil
		}
	}
}

// Mini starts a miniredis for the test.
func Mini(t testing.TB) *Backend {
	t.Helper()
	CaptureLibraryLog(t)
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return &Backend{Name: "miniredis", Client: rdb, Namespace: Namespace(t), URL: "redis://" + m.Addr() + "/0", Mini: m}
}

// Each runs fn as a subtest against every backend: real Redis, the Redis
// Cluster the tests share (see Cluster) and miniredis.
func Each(t *testing.T, fn func(t *testing.T, b *Backend)) {
	EachReal(t, fn)
	t.Run("miniredis", func(t *testing.T) { fn(t, Mini(t)) })
}

// EachReal runs fn as a subtest against the real backends only, one node
// and the cluster: for tests of what miniredis does not do as Redis does
// (blocking reads, Pub/Sub timing, WAIT, memory limits, script errors).
func EachReal(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Run("redis", func(t *testing.T) { fn(t, Real(t)) })
	t.Run("cluster", func(t *testing.T) { fn(t, Cluster(t)) })
}
