package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// privateEnv is a server over a redis-server of the test's own, for
// changing its configuration.
func privateEnv(t *testing.T, o envOptions, args ...string) (*env, *redis.Client) {
	t.Helper()
	srv := redistest.StartServer(t, args...)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { rdb.Close() })
	return newEnv(t, &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}, o), rdb
}

// A trigger or an event that Redis refuses at maxmemory is a 503
// redis_out_of_memory that says so, not a wrong type or an internal error;
// once memory is there again the same request is accepted.
func TestRefusedAtMaxmemoryIs503OutOfMemory(t *testing.T) {
	t.Parallel()
	e, rdb := privateEnv(t, envOptions{}, "--maxmemory-policy", "noeviction")
	e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyStatus, FallbackTTLMs: 60000,
		OnEvents: []string{"order.paid"}})
	trigger := map[string]any{"input": map[string]any{"id": "1"}}
	event := map[string]any{"key": "order.paid", "payload": map[string]any{"id": "2"}}
	ctx := context.Background()
	if err := rdb.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	for path, body := range map[string]any{"/api/v1/tasks/ship/runs": trigger, "/api/v1/events": event} {
		r := e.call("POST", path, body).expect(t, http.StatusServiceUnavailable)
		if r.str("error") != CodeRedisOutOfMemory || !strings.Contains(r.str("message"), "out of memory") {
			t.Fatalf("POST %s at maxmemory: %s", path, r.raw)
		}
	}
	if n := e.runCount(); n != 0 {
		t.Fatalf("%d runs written at maxmemory", n)
	}
	if err := rdb.ConfigSet(ctx, "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}
	e.call("POST", "/api/v1/tasks/ship/runs", trigger).expect(t, http.StatusCreated)
	e.call("POST", "/api/v1/events", event).expect(t, http.StatusAccepted)
}

// /readyz turns 503 redis_eviction_policy when Redis's maxmemory-policy is
// changed to one that may evict keys, and /metrics shows the policy and
// the memory headroom.
func TestReadyzAndMetricsFollowRedisMemory(t *testing.T) {
	t.Parallel()
	e, rdb := privateEnv(t, envOptions{client: client.Options{RedisCheckInterval: 20 * time.Millisecond}},
		"--maxmemory", "64mb", "--maxmemory-policy", "noeviction")
	addr := rdb.Options().Addr
	e.call("GET", "/readyz", nil).expect(t, http.StatusOK)
	m := string(e.call("GET", "/metrics", nil).expect(t, http.StatusOK).raw)
	for _, want := range []string{
		`taskq_redis_maxmemory_bytes{addr="` + addr + `"} 6.7108864e+07`,
		`taskq_redis_used_memory_bytes{addr="` + addr + `"} `,
		`taskq_redis_maxmemory_policy{addr="` + addr + `",policy="noeviction",source="config"} 1`,
		"taskq_redis_eviction_policy_unsafe 0",
		"taskq_redis_eviction_risk_accepted 0",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if err := rdb.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	var r response
	deadline := time.Now().Add(10 * time.Second)
	for r = e.call("GET", "/readyz", nil); r.status == http.StatusOK; r = e.call("GET", "/readyz", nil) {
		if time.Now().After(deadline) {
			t.Fatal("/readyz still 200 10s after the policy became allkeys-lru")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if r.status != http.StatusServiceUnavailable || r.str("error") != CodeRedisEvictionPolicy || !strings.Contains(r.str("message"), "allkeys-lru") {
		t.Fatalf("/readyz with allkeys-lru: %d %s", r.status, r.raw)
	}
	// An anonymous probe learns only that the server is not ready.
	if anon := e.callWith("GET", "/readyz", nil, nil); anon.status != http.StatusServiceUnavailable || anon.str("message") != "not ready" {
		t.Fatalf("anonymous /readyz with allkeys-lru: %d %s", anon.status, anon.raw)
	}
	if m := string(e.call("GET", "/metrics", nil).raw); !strings.Contains(m, "taskq_redis_eviction_policy_unsafe 1") {
		t.Error("the unsafe policy does not show in the metrics")
	}
	if err := rdb.ConfigSet(context.Background(), "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for e.callWith("GET", "/readyz", nil, nil).status != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("/readyz not 200 again 10s after the policy was noeviction again")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
