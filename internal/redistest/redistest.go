// Package redistest gives tests their own Redis: a namespace of their own on
// the shared real server (cleaned up after the test), an in-process
// miniredis, or a private redis-server process for fault tests.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// URLEnv overrides the address of the shared real Redis used by tests.
const URLEnv = "TASKQ_TEST_REDIS_URL"

// Backend is a Redis a test runs against.
type Backend struct {
	Name      string
	Client    redis.UniversalClient
	Namespace string
	// Mini is set for miniredis backends; tests use it to move time.
	Mini *miniredis.Miniredis
}

// Real reports whether the backend is a real Redis server.
func (b *Backend) Real() bool { return b.Mini == nil }

// Advance moves time forward: FastForward on miniredis, a sleep on a real
// server (whose clock cannot be moved).
func (b *Backend) Advance(d time.Duration) {
	if b.Mini != nil {
		b.Mini.FastForward(d)
		return
	}
	time.Sleep(d)
}

// Namespace returns a namespace unique to this test.
func Namespace(t testing.TB) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := strings.NewReplacer("/", "-", " ", "-").Replace(t.Name())
	if len(name) > 40 {
		name = name[:40]
	}
	return "t-" + name + "-" + hex.EncodeToString(b)
}

// Real connects to the shared real Redis (TASKQ_TEST_REDIS_URL or
// 127.0.0.1:6379) with a namespace of the test's own, and deletes every key
// of that namespace when the test ends. The test fails if Redis is not
// reachable: .ci/run starts one.
func Real(t testing.TB) *Backend {
	t.Helper()
	url := os.Getenv(URLEnv)
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: %s: %v", URLEnv, err)
	}
	rdb := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("redistest: real Redis at %s is not reachable (start one: redis-server --daemonize yes): %v", url, err)
	}
	ns := Namespace(t)
	t.Cleanup(func() {
		DeleteNamespace(context.Background(), rdb, ns)
		_ = rdb.Close()
	})
	return &Backend{Name: "redis", Client: rdb, Namespace: ns}
}

// DeleteNamespace removes every key of namespace ns with SCAN and UNLINK.
func DeleteNamespace(ctx context.Context, rdb redis.UniversalClient, ns string) {
	pattern := "taskq:{" + ns + "}:*"
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			rdb.Unlink(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

// Mini starts a miniredis for the test.
func Mini(t testing.TB) *Backend {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	return &Backend{Name: "miniredis", Client: rdb, Namespace: Namespace(t), Mini: m}
}

// Each runs fn as a subtest against real Redis and against miniredis.
func Each(t *testing.T, fn func(t *testing.T, b *Backend)) {
	t.Run("redis", func(t *testing.T) { fn(t, Real(t)) })
	t.Run("miniredis", func(t *testing.T) { fn(t, Mini(t)) })
}
