package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// GET /api/v1/workers lists a running worker with the run it holds.
func TestListWorkers(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		r := e.call("GET", "/api/v1/workers", nil).expect(t, http.StatusOK)
		if string(r.raw) != `{"workers":[],"lapsed":[],"truncated":false}`+"\n" {
			t.Fatalf("no workers: %s", r.raw)
		}
		def := mustDef(t, "held", task.Options{})
		started, release := make(chan string, 1), make(chan struct{})
		defer close(release)
		e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
			started <- ctx.RunID()
			<-release
			return in, nil
		}, def)
		run := e.call("POST", "/api/v1/tasks/held/runs", map[string]any{"input": map[string]any{}}).expect(t, http.StatusCreated)
		if id := <-started; id != run.str("runId") {
			t.Fatalf("handler got %s, want %s", id, run.str("runId"))
		}
		r = e.call("GET", "/api/v1/workers", nil).expect(t, http.StatusOK)
		ws := r.body["workers"].([]any)
		if len(ws) != 1 {
			t.Fatalf("workers: %s", r.raw)
		}
		w := ws[0].(map[string]any)
		runs := w["runs"].([]any)
		if w["status"] != "live" || w["leaseMs"] != float64(2000) || len(runs) != 1 ||
			runs[0].(map[string]any)["runId"] != run.str("runId") || runs[0].(map[string]any)["leaseLapsed"] != false {
			t.Fatalf("worker: %s", r.raw)
		}
	})
}
