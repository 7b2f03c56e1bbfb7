package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// A trigger's limits are applied by one step (internal/admission) on every
// way in: the Go client, the event ingester, the HTTP API's triggers and
// events, and the command line's. Each entry point gets an input nested
// one level deeper than the default limit and metadata one byte over its
// default limit, and must refuse both, naming the limit, with nothing
// written.
func TestEveryEntryPointAppliesTheAdmissionLimits(t *testing.T) {
	t.Parallel()
	depth := idempotency.MaxInputDepthDefault + 1
	deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	deepInput := `{"id":"x","n":` + deep + `}`
	// A metadata object of exactly MaxMetadataBytesDefault+1 bytes.
	filler := client.MaxMetadataBytesDefault + 1 - len(`{"s":""}`)
	bigMeta := `{"s":"` + strings.Repeat("m", filler) + `"}`

	type entry struct {
		name string
		// trigger sends input (a JSON object) with metadata (a JSON object
		// of string values) and returns the refusal's text ("" if none).
		trigger func(t *testing.T, f *admissionFixture, input, meta string) string
	}
	entries := []entry{
		{"client", func(t *testing.T, f *admissionFixture, input, meta string) string {
			_, err := f.c.TriggerJSON(context.Background(), leaseTask.Definition(), []byte(input), client.WithMetadata([]byte(meta)))
			return errText(err)
		}},
		{"events", func(t *testing.T, f *admissionFixture, input, meta string) string {
			_, err := f.ing.Push(context.Background(), "admission.test", json.RawMessage(input), json.RawMessage(meta))
			return errText(err)
		}},
		{"http trigger", func(t *testing.T, f *admissionFixture, input, meta string) string {
			return f.post(t, "/api/v1/tasks/lease/runs", `{"input":`+input+`,"additionalMetadata":`+meta+`}`)
		}},
		{"http event", func(t *testing.T, f *admissionFixture, input, meta string) string {
			return f.post(t, "/api/v1/events", `{"key":"admission.test","payload":`+input+`,"metadata":`+meta+`}`)
		}},
		{"cli trigger", func(t *testing.T, f *admissionFixture, input, meta string) string {
			r := f.cli.run("runs", "trigger", "lease", "--input", input, "--meta-json", meta)
			if r.code == 0 {
				return ""
			}
			return r.stderr
		}},
		{"cli event", func(t *testing.T, f *admissionFixture, input, meta string) string {
			args := []string{"events", "push", "admission.test", "--data", input}
			var m map[string]string
			if err := json.Unmarshal([]byte(meta), &m); err != nil {
				t.Fatal(err)
			}
			for k, v := range m {
				args = append(args, "--meta", k+"="+v)
			}
			r := f.cli.run(args...)
			if r.code == 0 {
				return ""
			}
			return r.stderr
		}},
	}
	cases := []struct {
		name, input, meta string
		want              string
	}{
		{"input nested too deep", deepInput, `{}`, "nests deeper than the limit of 64 levels"},
		{"metadata over its size", `{"id":"y"}`, bigMeta, "over the limit of 65536"},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newAdmissionFixture(t, b)
		for _, e := range entries {
			for _, tc := range cases {
				t.Run(e.name+"/"+tc.name, func(t *testing.T) {
					got := e.trigger(t, f, tc.input, tc.meta)
					if !strings.Contains(got, tc.want) {
						t.Errorf("refusal %q does not say %q", clip(got), tc.want)
					}
				})
			}
		}
		// Nothing got through: no run, no event.
		page, err := f.c.Inspector().ListRuns(context.Background(), client.ListOptions{})
		if err != nil || len(page.Items) != 0 {
			t.Errorf("runs after refused triggers: %d (%v), want none", len(page.Items), err)
		}
		evs, err := f.c.Inspector().ListEvents(context.Background(), client.ListOptions{})
		if err != nil || len(evs.Items) != 0 {
			t.Errorf("events after refused pushes: %d (%v), want none", len(evs.Items), err)
		}
	})
}

type admissionFixture struct {
	c   *client.Client
	ing *events.Ingester
	cli *cli
	url string
}

func newAdmissionFixture(t *testing.T, b *redistest.Backend) *admissionFixture {
	t.Helper()
	c := newTestClient(t, b)
	// The task is registered, as a worker would, so that the HTTP API and
	// the command line can trigger it by name; it also subscribes to the
	// event key, so the event has a run to admit.
	spec := taskdef.Spec(leaseTask.Definition())
	spec.OnEvents = []string{"admission.test"}
	raw, err := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redisstore.StoreOf(clientlink.Store(c)).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		t.Fatal(err)
	}
	ing, err := events.New(c, events.Options{RefreshInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.New(httpapi.Options{Client: c, Events: ing, Insecure: true, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return &admissionFixture{c: c, ing: ing, cli: newCLI(t, b), url: hs.URL}
}

// post sends body and returns the error message of a refusal ("" for a
// 2xx answer).
func (f *admissionFixture) post(t *testing.T, path, body string) string {
	t.Helper()
	res, err := http.Post(f.url+path, "application/json", bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var e struct {
		Message string `json:"message"`
	}
	_ = json.NewDecoder(res.Body).Decode(&e)
	if res.StatusCode < 300 {
		return ""
	}
	return e.Message
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}
