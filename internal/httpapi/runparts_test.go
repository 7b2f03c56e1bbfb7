package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// A run's attempts (each with its error), signals and durable steps are
// read over HTTP, page by page where they page, each answer validated
// against the contract; the run itself carries its attempts and counts.
func TestRunAttemptsSignalsAndStepsOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "parts-http", task.Options{Retries: 1,
			Backoff: task.Backoff{Initial: 10 * time.Millisecond, Max: 10 * time.Millisecond, Factor: 1}})
		e.register(taskdef.Spec(def))
		run := e.call(http.MethodPost, "/api/v1/tasks/parts-http/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated)
		id := run.str("runId")
		for i := range 3 {
			res, err := clientlink.Store(e.c).SignalRun(context.Background(), id, fmt.Sprint("s", i), []byte(fmt.Sprint(i)), 10)
			if err != nil || !res.Delivered {
				t.Fatalf("signal %d = %+v, %v", i, res, err)
			}
		}
		e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
			if _, err := worker.Step(ctx, "reserve", func(context.Context, string) (int, error) { return 7, nil }); err != nil {
				return nil, err
			}
			if ctx.Attempt() == 1 {
				return nil, fmt.Errorf("out of <stock>")
			}
			return json.RawMessage(`{}`), nil
		}, def)
		if got := e.result(id); got.str("status") != "succeeded" {
			t.Fatalf("result %s", got.raw)
		}

		r := e.call(http.MethodGet, "/api/v1/runs/"+id, nil).expect(t, http.StatusOK)
		if r.body["signalCount"] != 3.0 || r.body["stepCount"] != 1.0 {
			t.Errorf("run counts: %s", r.raw)
		}
		as := e.call(http.MethodGet, "/api/v1/runs/"+id+"/attempts", nil).expect(t, http.StatusOK)
		var got struct {
			Attempts []struct {
				Attempt                int
				Outcome, Error, Worker string
			}
		}
		if err := json.Unmarshal(as.raw, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Attempts) != 2 || got.Attempts[0].Outcome != "retry" || got.Attempts[0].Error != "out of <stock>" ||
			got.Attempts[0].Worker == "" || got.Attempts[1].Outcome != "succeeded" || got.Attempts[1].Attempt != 2 {
			t.Errorf("attempts: %s", as.raw)
		}
		if fmt.Sprint(r.body["attempts"]) != fmt.Sprint(as.body["attempts"]) {
			t.Errorf("the run's attempts %v differ from its attempts' %v", r.body["attempts"], as.body["attempts"])
		}

		var signals []string
		cursor := ""
		for range 4 {
			p := e.call(http.MethodGet, "/api/v1/runs/"+id+"/signals?limit=2&cursor="+url.QueryEscape(cursor), nil).expect(t, http.StatusOK)
			for _, s := range p.body["signals"].([]any) {
				m := s.(map[string]any)
				signals = append(signals, fmt.Sprint(m["signalId"], "=", m["payload"]))
			}
			if cursor = p.str("nextCursor"); cursor == "" {
				break
			}
		}
		if fmt.Sprint(signals) != "[s0=0 s1=1 s2=2]" {
			t.Errorf("signals %v", signals)
		}
		st := e.call(http.MethodGet, "/api/v1/runs/"+id+"/steps", nil).expect(t, http.StatusOK)
		if fmt.Sprint(st.body["steps"]) != "[map[name:reserve result:7]]" {
			t.Errorf("steps: %s", st.raw)
		}

		for _, path := range []string{"/attempts", "/signals", "/steps"} {
			nf := e.call(http.MethodGet, "/api/v1/runs/0190f3a2-7c1e-7b4e-9d1a-2f6c8e4b5a10"+path, nil).expect(t, http.StatusNotFound)
			if nf.str("error") != CodeRunNotFound {
				t.Errorf("%s of a missing run: %s", path, nf.raw)
			}
		}
		for _, q := range []string{"/signals?cursor=nope", "/steps?cursor=nope", "/signals?limit=0", "/steps?other=1"} {
			bad := e.call(http.MethodGet, "/api/v1/runs/"+id+q, nil).expect(t, http.StatusBadRequest)
			if bad.str("error") != CodeInvalidParameter {
				t.Errorf("%s: %s", q, bad.raw)
			}
		}
	})
}
