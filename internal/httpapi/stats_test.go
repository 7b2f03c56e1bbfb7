package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// After runs that succeed and fail and triggers refused as duplicates,
// GET /api/v1/stats counts them exactly, per task and overall, by the
// minute over an hour and by ten minutes over a day.
func TestGetStats(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		// The client flushes the duplicates it met often; the worker its
		// counts when it shuts down.
		e := newEnv(t, b, envOptions{client: client.Options{StatsInterval: 20 * time.Millisecond}})
		w := e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
			var v struct{ Fail bool }
			_ = json.Unmarshal(in, &v)
			if v.Fail {
				return nil, errors.New("told to fail")
			}
			return in, nil
		}, mustDef(t, "ship", task.Options{Idempotency: task.TTL(`"ship:" + input.id`, time.Minute)}),
			mustDef(t, "bill", task.Options{}))
		var ids []string
		for _, in := range []map[string]any{{"id": "1"}, {"id": "2"}, {"id": "3", "fail": true}} {
			ids = append(ids, e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": in}).expect(t, http.StatusCreated).str("runId"))
		}
		for range 2 {
			e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusConflict)
		}
		ids = append(ids, e.call("POST", "/api/v1/tasks/bill/runs", map[string]any{"input": map[string]any{}}).expect(t, http.StatusCreated).str("runId"))
		for _, id := range ids {
			e.result(id)
		}
		if err := w.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			r := e.call("GET", "/api/v1/stats?task=ship", nil).expect(t, http.StatusOK)
			if r.body["total"].(map[string]any)["duplicates"] == 2.0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the duplicates never flushed: %s", r.raw)
			}
		}
		for _, c := range []struct {
			query                                  string
			points, step                           int
			started, succeeded, failed, duplicates float64
		}{
			{"?task=ship", 60, 60, 3, 2, 1, 2},
			{"?task=ship&window=24h", 144, 600, 3, 2, 1, 2},
			{"", 60, 60, 4, 3, 1, 2},
			{"?window=24h", 144, 600, 4, 3, 1, 2},
			{"?task=bill&window=1h", 60, 60, 1, 1, 0, 0},
			{"?task=none", 60, 60, 0, 0, 0, 0},
		} {
			r := e.call("GET", "/api/v1/stats"+c.query, nil).expect(t, http.StatusOK)
			pts := r.body["points"].([]any)
			total := r.body["total"].(map[string]any)
			if len(pts) != c.points || r.body["stepSeconds"].(float64) != float64(c.step) {
				t.Fatalf("%s: %d points of %v s, want %d of %d", c.query, len(pts), r.body["stepSeconds"], c.points, c.step)
			}
			var started float64
			for _, p := range pts {
				started += p.(map[string]any)["started"].(float64)
			}
			if started != c.started || total["started"] != c.started || total["ended"] != c.started ||
				total["succeeded"] != c.succeeded || total["failed"] != c.failed || total["retried"] != 0.0 ||
				total["duplicates"] != c.duplicates {
				t.Errorf("%s: total %v (points started %v), want started and ended %v, succeeded %v, failed %v, duplicates %v",
					c.query, total, started, c.started, c.succeeded, c.failed, c.duplicates)
			}
			if c.started > 0 && total["runP99Ms"].(float64) < total["runP50Ms"].(float64) {
				t.Errorf("%s: p99 below p50: %v", c.query, total)
			}
		}
		r := e.call("GET", "/api/v1/stats?window=7d", nil).expect(t, http.StatusBadRequest)
		if r.str("error") != CodeInvalidParameter {
			t.Errorf("window=7d: %s", r.raw)
		}
	})
}

// GET /api/v1/queues counts a task's queued and scheduled runs.
func TestListQueues(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		e.register(task.Spec{Name: "ship", Expression: `"ship:" + input.id`, Strategy: task.StrategyTTL, TTLMs: 60000})
		e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated)
		e.call("POST", "/api/v1/tasks/ship/runs", map[string]any{"input": map[string]any{"id": "2"}, "runIn": "1h"}).expect(t, http.StatusCreated)
		r := e.call("GET", "/api/v1/queues", nil).expect(t, http.StatusOK)
		qs := r.body["queues"].([]any)
		if len(qs) != 1 {
			t.Fatalf("queues: %s", r.raw)
		}
		q := qs[0].(map[string]any)
		if q["task"] != "ship" || q["queued"] != 1.0 || q["scheduled"] != 1.0 || q["oldestQueued"] == nil || q["inFlight"] != 0.0 {
			t.Fatalf("the ship queue: %s", r.raw)
		}
	})
}
