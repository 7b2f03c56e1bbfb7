package httpapi

import (
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

// A trigger's "durability" field makes it wait for replicas: with one
// attached, the answer reports it; with it stopped, one run answers 504
// durability_not_reached naming the run it wrote, and a batch marks each
// run so; every answer follows api/openapi.yaml (callWith checks it).
func TestTriggerAsksForDurability(t *testing.T) {
	t.Parallel()
	m := redistest.StartServer(t, "--repl-diskless-sync-delay", "0")
	replica := redistest.StartReplica(t, m)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(t, &redistest.Backend{Name: "redis", Client: rdb, Namespace: redistest.Namespace(t), URL: m.URL()}, envOptions{})
	e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	e.register(task.Spec{Name: "plain"})

	r := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "1"},
		"durability": map[string]any{"replicas": 1, "timeoutMs": 3000}}).expect(t, http.StatusCreated)
	d, _ := r.body["durability"].(map[string]any)
	if d["reached"] != true || d["replicas"] != float64(1) || d["replicasWanted"] != float64(1) {
		t.Fatalf("durability %v", r.body["durability"])
	}
	// Without the field, nothing is said.
	if r := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "2"}}).expect(t, http.StatusCreated); r.body["durability"] != nil {
		t.Fatalf("a trigger without durability reports %v", r.body["durability"])
	}

	pid := replica.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })
	short := map[string]any{"replicas": 1, "timeoutMs": 50}
	r = e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "3"}, "durability": short}).
		expect(t, http.StatusGatewayTimeout)
	id := r.str("runId")
	if r.str("error") != CodeDurabilityNotReached || id == "" || r.str("idempotencyKey") != "ship:3" {
		t.Fatalf("answer %s", r.raw)
	}
	e.call("GET", "/api/v1/runs/"+id, nil).expect(t, http.StatusOK)
	// A keyless task's answer warns that a retry creates another run.
	r = e.call("POST", "/api/v1/tasks/plain/runs", map[string]any{"durability": short}).expect(t, http.StatusGatewayTimeout)
	if msg := r.str("message"); !strings.Contains(msg, "a retry creates another run") {
		t.Fatalf("keyless answer %q", msg)
	}

	r = e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"durability": short,
		"runs": []any{map[string]any{"input": map[string]any{"id": "4"}}, map[string]any{"input": map[string]any{"id": "3"}}}}).
		expect(t, http.StatusOK)
	runs, _ := r.body["runs"].([]any)
	if len(runs) != 2 {
		t.Fatalf("batch answer %s", r.raw)
	}
	first, dup := runs[0].(map[string]any), runs[1].(map[string]any)
	if first["status"] != float64(http.StatusGatewayTimeout) || first["error"] != CodeDurabilityNotReached || first["runId"] == "" ||
		first["durability"].(map[string]any)["reached"] != false {
		t.Fatalf("the batch's new run: %v", first)
	}
	if dup["status"] != float64(http.StatusConflict) || dup["existingRunId"] != id || dup["durability"] == nil {
		t.Fatalf("the batch's duplicate: %v", dup)
	}
	// Every shortfall is counted: one run, the keyless run, two in the batch.
	metrics := string(e.call("GET", "/metrics", nil).expect(t, http.StatusOK).raw)
	if !strings.Contains(metrics, `taskq_durability_shortfalls_total{reason="timeout",task="ship"} 3`) ||
		!strings.Contains(metrics, `taskq_durability_shortfalls_total{reason="timeout",task="plain"} 1`) {
		t.Fatalf("/metrics does not count the shortfalls:\n%s", metrics)
	}
}

// A level the server cannot give is refused before anything is written,
// naming the field.
func TestTriggerDurabilityIsChecked(t *testing.T) {
	t.Parallel()
	e := newEnv(t, redistest.Mini(t), envOptions{})
	e.register(task.Spec{Name: "ship"})
	for field, d := range map[string]map[string]any{
		"durability.replicas":   {"replicas": -1},
		"durability.timeoutMs":  {"replicas": 1, "timeoutMs": 5000}, // the operation timeout
		"durability.localFsync": {"localFsync": true},               // miniredis tells no version
	} {
		r := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"durability": d}).expect(t, http.StatusBadRequest)
		if r.str("field") != field {
			t.Fatalf("%v: answer %s, want field %s", d, r.raw, field)
		}
	}
}
