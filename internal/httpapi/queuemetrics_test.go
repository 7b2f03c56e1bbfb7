package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// gauge reads one series of /metrics; -1 when it is absent.
func (e *env) gauge(name, taskName string) float64 {
	e.t.Helper()
	text := e.call("GET", "/metrics", nil).expect(e.t, http.StatusOK).raw
	re := regexp.MustCompile(`(?m)^` + name + `\{task="` + regexp.QuoteMeta(taskName) + `"\} (\S+)$`)
	m := re.FindSubmatch(text)
	if m == nil {
		return -1
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		e.t.Fatalf("%s: %v", name, err)
	}
	return v
}

// waitGauges polls /metrics until the task's depth and in-flight gauges
// are depth and inFlight.
func (e *env) waitGauges(taskName string, depth, inFlight float64) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		d, f := e.gauge("taskq_queue_depth", taskName), e.gauge("taskq_runs_in_flight", taskName)
		if d == depth && f == inFlight {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("queue depth %v and in flight %v, want %v and %v", d, f, depth, inFlight)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// /metrics reports per task, summed over the partitions, the runs queued
// with no worker to take them and how long the oldest has waited; once a
// worker holds them they are in flight, and once they end neither.
func TestQueueMetrics(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "backlog", task.Options{Idempotency: task.TTL(`"backlog:" + input.id`, time.Minute)})
		raw, _ := json.Marshal(task.Registered{Spec: taskdef.Spec(def), Hash: taskdef.Hash(taskdef.Spec(def)), Worker: "test", RegisteredAt: time.Now().UTC()})
		if _, err := clientlink.Store(e.c).RegisterTask(context.Background(), taskdef.Spec(def).Name, raw, true); err != nil {
			t.Fatal(err)
		}
		if d := e.gauge("taskq_queue_depth", "backlog"); d != 0 {
			t.Fatalf("queue depth before any trigger: %v", d)
		}
		const n = 6
		for i := range n {
			e.call("POST", "/api/v1/tasks/backlog/runs", map[string]any{"input": map[string]any{"id": fmt.Sprint(i)}}).expect(t, http.StatusCreated)
		}
		time.Sleep(50 * time.Millisecond)
		e.waitGauges("backlog", n, 0)
		if age := e.gauge("taskq_oldest_queued_age_seconds", "backlog"); age < 0.04 || age > 60 {
			t.Fatalf("oldest queued age %v s, want at least the 50 ms waited", age)
		}

		release := make(chan struct{})
		e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
			select {
			case <-release:
			case <-ctx.Done():
			}
			return in, nil
		}, def)
		e.waitGauges("backlog", 0, n)
		if age := e.gauge("taskq_oldest_queued_age_seconds", "backlog"); age != 0 {
			t.Fatalf("oldest queued age %v with nothing queued", age)
		}
		close(release)
		e.waitGauges("backlog", 0, 0)
	})
}
