package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

func TestSignalKeyOverHTTP(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{})
		def := mustDef(t, "sig-http", task.Options{Idempotency: task.Status(`"order/" + input.id`, time.Minute).WithRetain(time.Minute)})
		e.register(taskdef.Spec(def))
		got := make(chan string, 1)
		e.startWorker(func(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
			s, err := ctx.NextSignal()
			if err != nil {
				return nil, err
			}
			got <- string(s.Payload)
			return json.RawMessage(`{}`), nil
		}, def)
		path := "/api/v1/keys/" + url.PathEscape("order/1") + "/signal"

		e.call(http.MethodPost, path, map[string]any{"payload": 1}).expect(t, http.StatusNotFound)
		run := e.call(http.MethodPost, "/api/v1/tasks/sig-http/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated)
		res := e.call(http.MethodPost, path, map[string]any{"payload": map[string]any{"confirmed": true}}).expect(t, http.StatusAccepted)
		if res.str("runId") != run.str("runId") || res.str("signalId") == "" {
			t.Fatalf("signal answer %s, want run %s", res.raw, run.str("runId"))
		}
		select {
		case p := <-got:
			if p != `{"confirmed":true}` {
				t.Fatalf("handler got %s", p)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("signal never reached the handler")
		}
		if _, err := client.Ref[json.RawMessage](e.c, run.str("runId")).Result(context.Background()); err != nil {
			t.Fatal(err)
		}
		// The key is retained after the run ended: it cannot be signalled.
		fin := e.call(http.MethodPost, path, map[string]any{"payload": 2}).expect(t, http.StatusConflict)
		if fin.str("error") != CodeOwnerFinished || fin.str("existingRunId") != run.str("runId") {
			t.Fatalf("signal to a finished owner: %s", fin.raw)
		}
		bad := e.call(http.MethodPost, path, map[string]any{}).expect(t, http.StatusBadRequest)
		if bad.str("field") != "payload" {
			t.Fatalf("missing payload: %s", bad.raw)
		}
	})
}

// A payload over the client's input limit is a 413 naming the field, not the
// 409 of a run that holds too many signals, and reaches no one.
func TestSignalPayloadOverTheLimit(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{client: client.Options{MaxInputBytes: 64}})
		def := mustDef(t, "sig-limit", task.Options{Idempotency: task.Status(`"big:" + input.id`, time.Minute)})
		e.register(taskdef.Spec(def))
		run := e.call(http.MethodPost, "/api/v1/tasks/sig-limit/runs", map[string]any{"input": map[string]any{"id": "1"}}).expect(t, http.StatusCreated)
		before := e.snapshot()
		big := map[string]any{"payload": map[string]any{"pad": strings.Repeat("x", 100)}}
		r := e.call(http.MethodPost, "/api/v1/keys/big:1/signal", big).expect(t, http.StatusRequestEntityTooLarge)
		if r.str("error") != CodePayloadTooLarge || r.str("field") != "payload" || !strings.Contains(r.str("message"), "over the limit of 64") {
			t.Fatalf("oversized signal payload: %s", r.raw)
		}
		if after := e.snapshot(); after != before {
			t.Fatalf("the rejected signal wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
		}
		if run.str("runId") == "" {
			t.Fatalf("trigger answer %s", run.raw)
		}
	})
}
