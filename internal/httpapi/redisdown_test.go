package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// With Redis down every operation that needs it answers 503
// redis_unavailable within a bounded time (the others, /healthz and
// /metrics, keep answering), /readyz says not ready, and every operation
// works again once Redis is back, without restarting anything. Each answer
// is checked against api/openapi.yaml as well.
func TestEveryOperationWithRedisDownAndBack(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	b := &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}
	e := newEnv(t, b, envOptions{client: client.Options{OperationTimeout: time.Second}})
	e.register(task.Spec{Name: "down", Expression: `"down:" + input.id`, Strategy: task.StrategyStatus, FallbackTTLMs: 600000, OnEvents: []string{"down.evt"}})
	runID := e.call("POST", "/api/v1/tasks/down/runs", map[string]any{"input": map[string]any{"id": "held"}}).expect(t, http.StatusCreated).str("runId")
	eventID := e.call("POST", "/api/v1/events", map[string]any{"key": "down.evt", "payload": map[string]any{"id": "ev"}}).expect(t, http.StatusAccepted).str("id")
	sched := map[string]any{"name": "down-sched", "task": "down", "cron": "@daily", "input": map[string]any{"id": "cron"}}
	e.call("POST", "/api/v1/schedules", sched).expect(t, http.StatusCreated)

	type op struct {
		method, path string
		body         any
		up           int  // the status once Redis answers
		needsRedis   bool // answers 503 while Redis is down
	}
	trigger := func(id string) map[string]any { return map[string]any{"input": map[string]any{"id": id}} }
	ops := map[string]op{
		"POST /api/v1/events":                   {"POST", "/api/v1/events", map[string]any{"key": "down.evt", "payload": map[string]any{"id": "x"}}, http.StatusAccepted, true},
		"GET /api/v1/events/{id}":               {"GET", "/api/v1/events/" + eventID, nil, http.StatusOK, true},
		"POST /api/v1/tasks/{task}/runs":        {"POST", "/api/v1/tasks/down/runs", trigger("held"), http.StatusConflict, true},
		"GET /api/v1/tasks":                     {"GET", "/api/v1/tasks", nil, http.StatusOK, true},
		"POST /api/v1/tasks/{task}/pause":       {"POST", "/api/v1/tasks/down/pause", nil, http.StatusOK, true},
		"POST /api/v1/tasks/{task}/resume":      {"POST", "/api/v1/tasks/down/resume", nil, http.StatusOK, true},
		"GET /api/v1/runs/{id}":                 {"GET", "/api/v1/runs/" + runID, nil, http.StatusOK, true},
		"GET /api/v1/runs/{id}/result":          {"GET", "/api/v1/runs/" + runID + "/result?wait=100ms", nil, http.StatusAccepted, true},
		"GET /api/v1/runs/{id}/attempts":        {"GET", "/api/v1/runs/" + runID + "/attempts", nil, http.StatusOK, true},
		"GET /api/v1/runs/{id}/signals":         {"GET", "/api/v1/runs/" + runID + "/signals", nil, http.StatusOK, true},
		"GET /api/v1/runs/{id}/steps":           {"GET", "/api/v1/runs/" + runID + "/steps", nil, http.StatusOK, true},
		"POST /api/v1/runs/{id}/cancel":         {"POST", "/api/v1/runs/no-such-run/cancel", nil, http.StatusNotFound, true},
		"GET /api/v1/keys/{key...}":             {"GET", "/api/v1/keys/down:held", nil, http.StatusOK, true},
		"POST /api/v1/keys/{key...}/signal":     {"POST", "/api/v1/keys/down:held/signal", map[string]any{"payload": 1}, http.StatusAccepted, true},
		"GET /api/v1/workers":                   {"GET", "/api/v1/workers", nil, http.StatusOK, true},
		"GET /api/v1/runs":                      {"GET", "/api/v1/runs?where=input.id=held", nil, http.StatusOK, true},
		"GET /api/v1/keys":                      {"GET", "/api/v1/keys?match=down:*", nil, http.StatusOK, true},
		"GET /api/v1/events":                    {"GET", "/api/v1/events?key=down.evt", nil, http.StatusOK, true},
		"POST /api/v1/runs/{id}/retry":          {"POST", "/api/v1/runs/no-such-run/retry", nil, http.StatusNotFound, true},
		"POST /api/v1/runs/{id}/reschedule":     {"POST", "/api/v1/runs/" + runID + "/reschedule", map[string]any{"runIn": "1h"}, http.StatusConflict, true},
		"POST /api/v1/runs/cancel":              {"POST", "/api/v1/runs/cancel", map[string]any{"filter": map[string]any{"task": "nosuch"}}, http.StatusOK, true},
		"POST /api/v1/runs/retry":               {"POST", "/api/v1/runs/retry", map[string]any{"filter": map[string]any{"task": "nosuch"}}, http.StatusOK, true},
		"POST /api/v1/events/{id}/replay":       {"POST", "/api/v1/events/no-such-event/replay", nil, http.StatusNotFound, true},
		"DELETE /api/v1/keys/{key...}":          {"DELETE", "/api/v1/keys/no-such-key", nil, http.StatusNotFound, true},
		"GET /api/v1/suppressed":                {"GET", "/api/v1/suppressed?key=down:held", nil, http.StatusOK, true},
		"GET /api/v1/stats":                     {"GET", "/api/v1/stats?window=24h", nil, http.StatusOK, true},
		"GET /api/v1/queues":                    {"GET", "/api/v1/queues?task=down", nil, http.StatusOK, true},
		"GET /api/v1/ratelimits":                {"GET", "/api/v1/ratelimits", nil, http.StatusOK, true},
		"GET /api/v1/schedules":                 {"GET", "/api/v1/schedules", nil, http.StatusOK, true},
		"POST /api/v1/schedules":                {"POST", "/api/v1/schedules", sched, http.StatusConflict, true},
		"GET /api/v1/schedules/{name}":          {"GET", "/api/v1/schedules/down-sched", nil, http.StatusOK, true},
		"PUT /api/v1/schedules/{name}":          {"PUT", "/api/v1/schedules/down-sched", sched, http.StatusOK, true},
		"DELETE /api/v1/schedules/{name}":       {"DELETE", "/api/v1/schedules/no-such-schedule", nil, http.StatusNotFound, true},
		"POST /api/v1/schedules/{name}/pause":   {"POST", "/api/v1/schedules/down-sched/pause", nil, http.StatusOK, true},
		"POST /api/v1/schedules/{name}/resume":  {"POST", "/api/v1/schedules/down-sched/resume", nil, http.StatusOK, true},
		"POST /api/v1/schedules/{name}/trigger": {"POST", "/api/v1/schedules/down-sched/trigger", nil, http.StatusCreated, true},
		"POST /api/v1/webhooks/{source}":        {"POST", "/api/v1/webhooks/no-such-source", map[string]any{}, http.StatusNotFound, false},
		"GET /healthz":                          {"GET", "/healthz", nil, http.StatusOK, false},
		"GET /readyz":                           {"GET", "/readyz", nil, http.StatusOK, true},
		"GET /metrics":                          {"GET", "/metrics", nil, http.StatusOK, false},
	}
	for _, rt := range e.s.routes {
		if _, ok := ops[rt.method+" "+rt.pattern]; !ok {
			t.Fatalf("route %s %s has no case here: add one", rt.method, rt.pattern)
		}
	}

	srv.Kill()
	for name, o := range ops {
		start := time.Now()
		r := e.call(o.method, o.path, o.body)
		took := time.Since(start)
		switch {
		case !o.needsRedis && r.status != o.up:
			t.Errorf("%s with Redis down: %d %s, want %d", name, r.status, r.raw, o.up)
		case o.needsRedis && (r.status != http.StatusServiceUnavailable || r.str("error") != CodeRedisUnavailable):
			t.Errorf("%s with Redis down: %d %s, want 503 redis_unavailable", name, r.status, r.raw)
		}
		// OperationTimeout is 1s; a call may make a few, in turn.
		if took > 10*time.Second {
			t.Errorf("%s with Redis down took %s", name, took)
		}
	}

	srv.Start()
	for name, o := range ops {
		deadline := time.Now().Add(15 * time.Second)
		for {
			r := e.call(o.method, o.path, o.body)
			if r.status == o.up {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s after Redis came back: %d %s, want %d", name, r.status, r.raw, o.up)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
