package client_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/redisguard"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// A redis:// URL of one node of a cluster is refused at New, with the
// cluster URL to use instead; the cluster URL itself is accepted.
func TestNewRefusesOneNodeOfACluster(t *testing.T) {
	b := redistest.Cluster(t)
	seeds, _, _ := strings.Cut(strings.TrimPrefix(b.URL, "redis+cluster://"), "/")
	node, _, _ := strings.Cut(seeds, ",")
	_, err := client.New(client.Options{RedisURL: "redis://" + node + "/0", Namespace: b.Namespace, Logger: discard})
	if !errors.Is(err, client.ErrClusterNode) || !strings.Contains(err.Error(), "redis+cluster://"+node) {
		t.Fatalf("New with redis:// to cluster node %s: %v; want ErrClusterNode naming redis+cluster://", node, err)
	}
	// Even when the risk of eviction is accepted: this is no risk to take.
	_, err = client.New(client.Options{RedisURL: "redis://" + node + "/0", Namespace: b.Namespace, Logger: discard,
		AllowEvictingRedis: true})
	if !errors.Is(err, client.ErrClusterNode) {
		t.Fatalf("New with AllowEvictingRedis: %v; want ErrClusterNode", err)
	}
	c, err := client.New(client.Options{RedisURL: b.URL, Namespace: b.Namespace, Logger: discard})
	if err != nil {
		t.Fatalf("New with the cluster URL: %v", err)
	}
	c.Close()
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// A port where nothing listens gives an error that says the connection
// was refused, not that Redis did not answer in time.
func TestRefusedConnectionSaysSo(t *testing.T) {
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", freePort(t))
	c, err := client.New(client.Options{RedisURL: url, Logger: discard, OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("New with Redis not running: %v (New accepts a Redis it cannot reach)", err)
	}
	defer c.Close()
	err = c.Ping(context.Background())
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "refused the connection") ||
		!strings.Contains(err.Error(), "connection refused") || strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("Ping with nothing listening: %v; want it to say the connection was refused", err)
	}
}

// A Redis that cannot be reached at New is checked when it first answers:
// the first call refuses an evicting one, as New refuses it when it
// answers at once.
func TestRedisUnreachableAtNewIsCheckedAtFirstUse(t *testing.T) {
	srv := redistest.StartServer(t, "--maxmemory-policy", "allkeys-lru")
	_, err := client.New(client.Options{RedisURL: srv.URL(), Logger: discard})
	var ep *redisguard.EvictingPolicyError
	if !errors.As(err, &ep) {
		t.Fatalf("New with an evicting Redis: %v; want a *redisguard.EvictingPolicyError", err)
	}
	srv.Kill()
	c, err := client.New(client.Options{RedisURL: srv.URL(), Logger: discard, OperationTimeout: time.Second})
	if err != nil {
		t.Fatalf("New with Redis down: %v", err)
	}
	defer c.Close()
	srv.Start()
	if err := c.Ping(context.Background()); !errors.As(err, &ep) {
		t.Fatalf("the first call once the evicting Redis is back: %v; want a *redisguard.EvictingPolicyError", err)
	}
	if err := c.Ping(context.Background()); !errors.As(err, &ep) {
		t.Fatalf("the second call: %v; want a *redisguard.EvictingPolicyError", err)
	}
}

// A URL of a scheme taskq does not dial is refused with the schemes it
// does.
func TestBadSchemeListsTheSchemes(t *testing.T) {
	_, err := client.New(client.Options{RedisURL: "http://127.0.0.1:6379/0", Logger: discard})
	if err == nil || !strings.Contains(err.Error(), `"http"`) {
		t.Fatalf("New with http://: %v", err)
	}
	for _, s := range []string{"redis://", "rediss://", "unix://", "redis+cluster://", "rediss+cluster://"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the error does not list %s: %v", s, err)
		}
	}
}
