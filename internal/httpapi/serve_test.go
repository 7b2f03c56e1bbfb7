package httpapi

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// served is a Server running Serve on a real loopback listener.
type served struct {
	*env
	cancel context.CancelFunc
	done   chan error
}

func serve(t *testing.T, b *redistest.Backend, o envOptions) *served {
	t.Helper()
	e := newEnv(t, b, o) // its httptest server is unused here
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{env: e, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- e.s.Serve(ctx, ln) }()
	e.url = "http://" + ln.Addr().String()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return")
		}
	})
	return s
}

// waitSubscribed blocks until someone waits on the run's completion (the
// long-poll is in flight).
func waitSubscribed(t *testing.T, b *redistest.Backend, c *client.Client, runID string) {
	t.Helper()
	ch, err := clientlink.Store(c).DoneTopic(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		n, err := b.Client.PubSubNumSub(context.Background(), ch).Result()
		if err == nil && n[ch] > 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the long-poll never started waiting")
}

// blockingWorker runs task "slow" with a handler that returns once release
// is closed.
func blockingWorker(e *env, release chan struct{}) {
	e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
		select {
		case <-release:
			return json.RawMessage(`{"done":true}`), nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}, task.Must[map[string]any, map[string]any]("slow", task.Options{}).Definition())
}

// Shutdown lets an in-flight long-poll finish: once the server's context
// ends it accepts no new connections, the long-poll still gets the run's
// result when the run ends, and only then does Serve return.
func TestGracefulShutdownLetsLongPollFinish(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	s := serve(t, b, envOptions{})
	release := make(chan struct{})
	blockingWorker(s.env, release)
	runID := s.call("POST", "/api/v1/tasks/slow/runs", map[string]any{"input": map[string]any{}}).expect(t, http.StatusCreated).str("runId")

	polled := make(chan response, 1)
	go func() { polled <- s.call("GET", "/api/v1/runs/"+runID+"/result?wait=20s", nil) }()
	waitSubscribed(t, b, s.c, runID)

	s.cancel()
	// The listener closes at once; the in-flight request keeps going.
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "http://"), 100*time.Millisecond)
		if err != nil {
			break
		}
		conn.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections after its context ended")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-s.done:
		t.Fatalf("Serve returned (%v) while a request was in flight", err)
	case r := <-polled:
		t.Fatalf("the long-poll answered before the run ended: %d %s", r.status, r.raw)
	default:
	}

	close(release)
	r := <-polled
	if r.status != http.StatusOK || r.str("status") != "succeeded" || !strings.Contains(string(r.raw), `"done":true`) {
		t.Fatalf("long-poll answer: %d %s", r.status, r.raw)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		s.done <- nil // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the last request finished")
	}
}

// A long-poll still waiting when ShutdownTimeout runs out answers with the
// run's current state instead of being cut off.
func TestShutdownTimeoutAnswersPendingLongPoll(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	s := serve(t, b, envOptions{server: Options{ShutdownTimeout: 100 * time.Millisecond}})
	release := make(chan struct{})
	defer close(release)
	blockingWorker(s.env, release)
	runID := s.call("POST", "/api/v1/tasks/slow/runs", map[string]any{"input": map[string]any{}}).expect(t, http.StatusCreated).str("runId")
	polled := make(chan response, 1)
	go func() { polled <- s.call("GET", "/api/v1/runs/"+runID+"/result?wait=20s", nil) }()
	waitSubscribed(t, b, s.c, runID)
	s.cancel()
	r := <-polled
	if r.status != http.StatusAccepted || r.str("runId") != runID || r.str("status") == "" {
		t.Fatalf("long-poll answer at shutdown: %d %s", r.status, r.raw)
	}
	if err := <-s.done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	s.done <- nil
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	s := serve(t, b, envOptions{})
	s.startWorker(echo,
		mustDef(t, "charge", task.Options{Idempotency: task.TTL(`"charge:" + input.id`, time.Minute), OnEvents: []string{"order.paid"}}),
		mustDef(t, "broken", task.Options{Idempotency: task.TTL(`input.missing`, time.Minute), OnEvents: []string{"order.paid"}}))
	id := s.call("POST", "/api/v1/tasks/charge/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated).str("runId")
	s.call("POST", "/api/v1/tasks/charge/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusConflict)
	s.call("POST", "/api/v1/events", map[string]any{"key": "order.paid", "payload": map[string]any{"id": "2"}}).expect(t, http.StatusAccepted)
	s.call("POST", "/api/v1/events", map[string]any{"key": "order.paid", "payload": map[string]any{"id": "2"}}).expect(t, http.StatusAccepted)
	s.result(id)

	want := []string{
		`taskq_triggers_accepted_total{source="http",task="charge"} 1`,
		`taskq_triggers_accepted_total{source="event",task="charge"} 1`,
		`taskq_idempotency_collisions_total{source="http",task="charge"} 1`,
		`taskq_idempotency_collisions_total{source="event",task="charge"} 1`,
		`taskq_events_ingested_total 2`,
		`taskq_event_task_errors_total{task="broken"} 2`,
		`taskq_trigger_duration_seconds_count{source="http"} 2`,
		`taskq_trigger_duration_seconds_count{source="event"} 2`,
		`taskq_http_requests_total{code="409",route="POST /api/v1/tasks/{task}/runs"} 1`,
		`taskq_runs_finished_total{status="succeeded"} `,
	}
	var text string
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := s.call("GET", "/metrics", nil).expect(t, http.StatusOK)
		text = string(r.raw)
		// The run's completion notice reaches the counter asynchronously.
		if !strings.Contains(text, `taskq_runs_finished_total{status="succeeded"} 0`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, line := range want {
		if !strings.Contains(text, line) {
			t.Errorf("metrics lack %q", line)
		}
	}
	if strings.Contains(text, `taskq_runs_finished_total{status="succeeded"} 0`) {
		t.Error("the finished run was not counted")
	}
	if r := s.callWith("GET", "/metrics", nil, nil); r.status != http.StatusUnauthorized {
		t.Errorf("/metrics without a token: %d", r.status)
	}
}

// /readyz reports Redis down while /healthz stays up.
func TestReadyzFollowsRedis(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	b := &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}
	e := newEnv(t, b, envOptions{client: client.Options{OperationTimeout: time.Second}})
	e.call("GET", "/readyz", nil).expect(t, http.StatusOK)
	// An ingester that keeps the subscriptions it read while Redis was up,
	// so that pushes below fail at the push itself.
	ing, err := events.New(e.c, events.Options{RefreshInterval: time.Hour, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.s.ing = ing
	e.call("POST", "/api/v1/events", map[string]any{"key": "k"}).expect(t, http.StatusAccepted)
	srv.Kill()
	// An anonymous probe learns only that the server is not ready; with
	// the token it learns why.
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong-token-0123456789"}} {
		r := e.callWith("GET", "/readyz", nil, h).expect(t, http.StatusServiceUnavailable)
		if r.str("error") != CodeRedisUnavailable || r.str("message") != "not ready" || strings.Contains(string(r.raw), srv.Addr()) {
			t.Fatalf("readyz with Redis down, without a valid token: %s", r.raw)
		}
	}
	r := e.call("GET", "/readyz", nil).expect(t, http.StatusServiceUnavailable)
	if r.str("error") != CodeRedisUnavailable || !strings.Contains(r.str("message"), "Redis is not reachable") ||
		!strings.Contains(r.str("message"), srv.Addr()) {
		t.Fatalf("readyz with Redis down, with the token: %s", r.raw)
	}
	e.callWith("GET", "/healthz", nil, nil).expect(t, http.StatusOK)
	r = e.call("POST", "/api/v1/events", map[string]any{"key": "k"}).expect(t, http.StatusServiceUnavailable)
	if r.str("error") != CodeRedisUnavailable {
		t.Fatalf("push with Redis down: %s", r.raw)
	}
	// A batch none of whose events could be stored is a 503 as well.
	r = e.call("POST", "/api/v1/events", `{"events": [{"key": "k"}, {"key": "k2"}]}`).expect(t, http.StatusServiceUnavailable)
	if r.str("error") != CodeRedisUnavailable {
		t.Fatalf("batch push with Redis down: %s", r.raw)
	}
	srv.Start()
	e.call("GET", "/readyz", nil).expect(t, http.StatusOK)
}

// A run batch none of whose runs could be written, because Redis went away
// after the task's definition was read, is a 503 as a whole, as a single
// trigger would be.
func TestRunBatchWithRedisGoneIsUnavailable(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	e := newEnv(t, &redistest.Backend{Name: "private", Client: rdb, Namespace: redistest.Namespace(t)}, envOptions{})
	e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
	hook := &redistest.ScriptFailure{}
	hook.Broken.Store(true)
	rdb.AddHook(hook)
	r := e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"runs": []any{
		map[string]any{"input": map[string]any{"id": "1"}}, map[string]any{"input": map[string]any{"id": "2"}},
	}}).expect(t, http.StatusServiceUnavailable)
	if r.str("error") != CodeRedisUnavailable || !strings.Contains(r.str("message"), "did not answer") {
		t.Fatalf("batch with Redis gone: %s", r.raw)
	}
	r = e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "3"}}).expect(t, http.StatusServiceUnavailable)
	if r.str("error") != CodeRedisUnavailable {
		t.Fatalf("single trigger with Redis gone: %s", r.raw)
	}
}
