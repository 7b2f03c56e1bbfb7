package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/devtasks"
	"github.com/taskq/taskq/internal/redistest"
)

// privateRedis is a redis-server of the test's own, as a backend.
func privateRedis(t *testing.T, args ...string) *redistest.Backend {
	t.Helper()
	srv := redistest.StartServer(t, args...)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}
}

// listening matches the HTTP API's log line naming its address.
var listening = regexp.MustCompile(`msg="taskq HTTP API listening" addr=(127\.0\.0\.1:\d+)`)

// serveUntilAddr runs args (a serve or dev command) until it logs its
// address, and returns the address and a function that stops it and
// returns its result.
func serveUntilAddr(t *testing.T, args ...string) (addr string, stderr *redistest.LogBuffer, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &redistest.LogBuffer{}
	done := make(chan result, 1)
	go func() { done <- runWith(ctx, invocation{stderr: stderr, stdout: &redistest.LogBuffer{}}, args...) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr, func() result { cancel(); return <-done }
		}
		select {
		case r := <-done:
			cancel()
			t.Fatalf("%v ended with exit %d before serving: %s", args, r.code, r.stderr)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("%v did not log its address: %s", args, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// taskq serve, taskq dev --redis and every other command refuse a Redis
// whose maxmemory-policy may evict keys (exit 1, naming the policy, the
// server and the fix); with --allow-evicting-redis they run, warn, and
// serve report the accepted risk in its metrics.
func TestCommandsRefuseAnEvictingRedis(t *testing.T) {
	t.Parallel()
	b := privateRedis(t, "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru")
	c := newCLI(t, b)
	addr := b.Client.(*redis.Client).Options().Addr
	for _, args := range [][]string{
		{"serve", "--addr", "127.0.0.1:0", "--insecure"},
		{"dev", "--redis", c.url, "--demo"},
		{"keys", "ls"},
	} {
		r := c.run(args...)
		if r.code != exitFailure {
			t.Fatalf("%v on allkeys-lru: exit %d, want %d: %s", args, r.code, exitFailure, r.stderr)
		}
		for _, want := range []string{"allkeys-lru", addr, "noeviction", "--allow-evicting-redis"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("%v: stderr does not say %q: %s", args, want, r.stderr)
			}
		}
	}
	if n := b.Client.DBSize(context.Background()).Val(); n != 0 {
		t.Fatalf("refused commands wrote %d keys", n)
	}

	if r := c.run("--allow-evicting-redis", "keys", "ls"); r.code != exitOK || !strings.Contains(r.stderr, "level=WARN") {
		t.Fatalf("keys ls --allow-evicting-redis: exit %d, stderr %s", r.code, r.stderr)
	}
	srvAddr, stderr, stop := serveUntilAddr(t, c.args([]string{"--allow-evicting-redis", "serve", "--addr", "127.0.0.1:0", "--insecure"})...)
	resp, err := http.Get("http://" + srvAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), "taskq_redis_eviction_risk_accepted 1") {
		t.Errorf("metrics of serve --allow-evicting-redis lack the accepted risk:\n%s", m)
	}
	if r := stop(); r.code != exitOK {
		t.Fatalf("serve exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(stderr.String(), "level=WARN") || !strings.Contains(stderr.String(), "allkeys-lru") {
		t.Errorf("serve --allow-evicting-redis gave no warning naming the policy:\n%s", stderr)
	}
}

// A trigger or a push that Redis refuses at maxmemory fails with exit 1
// and says Redis is out of memory.
func TestRefusedAtMaxmemoryExits1WithTheReason(t *testing.T) {
	t.Parallel()
	b := privateRedis(t, "--maxmemory-policy", "noeviction")
	if err := startWorker(t, b).Shutdown(context.Background()); err != nil { // registers the example tasks
		t.Fatal(err)
	}
	c := newCLI(t, b)
	if err := b.Client.ConfigSet(context.Background(), "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "trigger", "process-order", "--input", `{"orderId":"7001","amount":100}`},
		{"events", "push", devtasks.EventKey, "--data", `{"id":"evt_7001"}`},
	} {
		r := c.run(args...)
		if r.code != exitFailure || !strings.Contains(r.stderr, "out of memory") || strings.Contains(r.stderr, "holds a") {
			t.Errorf("%v at maxmemory: exit %d, stderr %s; want exit 1 saying Redis is out of memory", args, r.code, r.stderr)
		}
	}
	if err := b.Client.ConfigSet(context.Background(), "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if r := c.run("runs", "trigger", "process-order", "--input", `{"orderId":"7001","amount":100}`); r.code != exitOK {
		t.Fatalf("trigger with memory again: exit %d: %s", r.code, r.stderr)
	}
}
