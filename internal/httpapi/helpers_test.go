package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

const testToken = "s3cret-token-for-tests"

// env is a server on a real listener (httptest) over a test's own
// namespace.
type env struct {
	t   *testing.T
	b   *redistest.Backend
	c   *client.Client
	s   *Server
	url string
}

type envOptions struct {
	server Options
	client client.Options
}

func newEnv(t *testing.T, b *redistest.Backend, o envOptions) *env {
	t.Helper()
	co := o.client
	co.Redis, co.Namespace, co.Logger = b.Client, b.Namespace, quiet
	c, err := client.New(co)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	so := o.server
	so.Client = c
	if so.Token == "" && !so.Insecure && so.Tokens == nil {
		so.Token = testToken
	}
	so.Logger = quiet
	s, err := New(so)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &env{t: t, b: b, c: c, s: s, url: hs.URL}
}

// response is an answer with its JSON body decoded.
type response struct {
	status int
	header http.Header
	raw    []byte
	body   map[string]any
}

func (r response) str(field string) string {
	s, _ := r.body[field].(string)
	return s
}

// call sends a request with the test token. body is sent as is when it is
// a string, as JSON otherwise (nil: no body).
func (e *env) call(method, path string, body any) response {
	e.t.Helper()
	return e.callWith(method, path, body, map[string]string{"Authorization": "Bearer " + testToken})
}

func (e *env) callWith(method, path string, body any, headers map[string]string) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		if v == noHeader {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := response{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	if err := checkContract(req, resp.StatusCode, resp.Header, raw); err != nil {
		e.t.Errorf("%s %s: the answer breaks api/openapi.yaml: %v\n%d %.500s", method, clip(path), err, resp.StatusCode, raw)
	}
	return r
}

// noHeader as a header's value in callWith leaves the header out.
const noHeader = "\x00none"

// rawPost posts body with the token and no Content-Type.
func (e *env) rawPost(path, body string) response {
	e.t.Helper()
	return e.callWith("POST", path, body, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": noHeader})
}

// expect fails unless the answer has the status.
func (r response) expect(t *testing.T, status int) response {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	return r
}

// register publishes a task definition as a worker would, without running
// a worker.
func (e *env) register(spec task.Spec) {
	e.t.Helper()
	if spec.BackoffInitialMs == 0 {
		spec.BackoffInitialMs, spec.BackoffFactor = 1000, 2
	}
	if spec.MaxDeliveries == 0 {
		spec.MaxDeliveries = spec.Retries + 11
	}
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
	if _, err := clientlink.Store(e.c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		e.t.Fatal(err)
	}
}

// startWorker runs a real worker handling each definition with fn.
func (e *env) startWorker(fn func(worker.Context, json.RawMessage) (json.RawMessage, error), defs ...*task.Definition) *worker.Worker {
	e.t.Helper()
	w, err := worker.New(worker.Options{
		Redis: e.b.Client, Namespace: e.b.Namespace, Logger: quiet,
		LeaseDuration: 2 * time.Second, FetchBlock: 100 * time.Millisecond, ShutdownTimeout: 200 * time.Millisecond,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, d := range defs {
		if err := w.HandleJSON(d, fn); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := w.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	return w
}

// echo answers with the task name and the run's input.
func echo(ctx worker.Context, in json.RawMessage) (json.RawMessage, error) {
	return json.Marshal(map[string]any{"task": ctx.TaskName(), "input": in})
}

func mustDef(t *testing.T, name string, opts task.Options) *task.Definition {
	t.Helper()
	d, err := task.NewDefinition(name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// snapshot describes every key of the namespace: its type and size.
func (e *env) snapshot() string {
	e.t.Helper()
	ctx := context.Background()
	keys, err := redistest.NamespaceKeys(ctx, e.b.Client, e.b.Namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for _, k := range keys {
		typ := e.b.Client.Type(ctx, k).Val()
		var n int64
		switch typ {
		case "hash":
			n = e.b.Client.HLen(ctx, k).Val()
		case "zset":
			n = e.b.Client.ZCard(ctx, k).Val()
		case "stream":
			n = e.b.Client.XLen(ctx, k).Val()
		}
		fmt.Fprintf(&sb, "%s %s %d\n", k, typ, n)
	}
	return sb.String()
}

func (e *env) runCount() int {
	e.t.Helper()
	ids, err := clientlink.Store(e.c).ListRunIDs(context.Background(), 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ids)
}

// result long-polls a run's result until it has ended.
func (e *env) result(runID string) response {
	e.t.Helper()
	return e.call("GET", "/api/v1/runs/"+runID+"/result?wait=10s", nil).expect(e.t, http.StatusOK)
}
