package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/httpapi"
	"github.com/taskq/taskq/internal/redistest"
)

// The command line's -o json and the HTTP API describe each resource with
// the same field names, and the same values where they do not depend on
// the moment of the read: each resource is read both ways from the same
// Redis state and compared.
func TestCLIAndHTTPSpeakTheSameJSON(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := seed(t, b)
		s, err := httpapi.New(httpapi.Options{Client: f.c, Events: f.ing, Insecure: true, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s.Handler())
		t.Cleanup(hs.Close)
		paid := f.runs["paid"]

		call := func(t *testing.T, method, path, body string, status int) map[string]any {
			t.Helper()
			req, err := http.NewRequest(method, hs.URL+path, bytes.NewBufferString(body))
			if err != nil {
				t.Fatal(err)
			}
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			if res.StatusCode != status {
				t.Fatalf("%s %s: %d, want %d\n%s", method, path, res.StatusCode, status, raw)
			}
			return object(t, raw)
		}
		cli := func(t *testing.T, code int, args ...string) map[string]any {
			t.Helper()
			r := f.cli.run(append(args, "-o", "json")...)
			if r.code != code {
				t.Fatalf("taskq %v: exit %d, want %d\n%s%s", args, r.code, code, r.stdout, r.stderr)
			}
			return object(t, []byte(r.stdout))
		}

		cases := []struct {
			name     string
			cli      func(t *testing.T) map[string]any
			http     func(t *testing.T) map[string]any
			volatile []string // fields whose values depend on the moment or on a new ID
		}{
			{name: "run",
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "runs", "get", paid) },
				http: func(t *testing.T) map[string]any { return call(t, "GET", "/api/v1/runs/"+paid, "", 200) }},
			{name: "run outcome",
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "runs", "result", paid) },
				http: func(t *testing.T) map[string]any { return call(t, "GET", "/api/v1/runs/"+paid+"/result", "", 200) }},
			{name: "cancellation of an ended run",
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "runs", "cancel", paid) },
				http: func(t *testing.T) map[string]any { return call(t, "POST", "/api/v1/runs/"+paid+"/cancel", "", 200) }},
			{name: "key", volatile: []string{"ttlMs", "expiresAt"},
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "keys", "get", "order:1003") },
				http: func(t *testing.T) map[string]any { return call(t, "GET", "/api/v1/keys/order:1003", "", 200) }},
			{name: "trigger result",
				cli: func(t *testing.T) map[string]any {
					return cli(t, 0, "runs", "trigger", "process-order", "--input", `{"orderId":"1003"}`, "--on-conflict", "attach")
				},
				http: func(t *testing.T) map[string]any {
					return call(t, "POST", "/api/v1/tasks/process-order/runs", `{"input":{"orderId":"1003"},"onConflict":"attach"}`, 200)
				}},
			{name: "collision",
				cli: func(t *testing.T) map[string]any {
					return cli(t, exitCollision, "runs", "trigger", "process-order", "--input", `{"orderId":"1003"}`)
				},
				http: func(t *testing.T) map[string]any {
					return call(t, "POST", "/api/v1/tasks/process-order/runs", `{"input":{"orderId":"1003"}}`, 409)
				}},
			{name: "key expression error", volatile: []string{"message"},
				cli: func(t *testing.T) map[string]any {
					return cli(t, exitFailure, "runs", "trigger", "process-order", "--input", `{"amount":1}`)
				},
				http: func(t *testing.T) map[string]any {
					return call(t, "POST", "/api/v1/tasks/process-order/runs", `{"input":{"amount":1}}`, 422)
				}},
			{name: "event",
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "events", "get", f.evs["first"]) },
				http: func(t *testing.T) map[string]any { return call(t, "GET", "/api/v1/events/"+f.evs["first"], "", 200) }},
			{name: "pushed event", volatile: []string{"id", "createdAt"},
				cli: func(t *testing.T) map[string]any {
					return cli(t, 0, "events", "push", "webhook.received", "--data", `{"id":"evt_1"}`)
				},
				http: func(t *testing.T) map[string]any {
					return call(t, "POST", "/api/v1/events", `{"key":"webhook.received","payload":{"id":"evt_1"}}`, 202)
				}},
			{name: "rate limits",
				cli:  func(t *testing.T) map[string]any { return cli(t, 0, "ratelimits", "ls") },
				http: func(t *testing.T) map[string]any { return call(t, "GET", "/api/v1/ratelimits", "", 200) }},
			{name: "task",
				cli: func(t *testing.T) map[string]any { return cli(t, 0, "tasks", "get", "handle-webhook") },
				http: func(t *testing.T) map[string]any {
					for _, x := range call(t, "GET", "/api/v1/tasks", "", 200)["tasks"].([]any) {
						if reg := x.(map[string]any); reg["spec"].(map[string]any)["name"] == "handle-webhook" {
							return reg
						}
					}
					t.Fatal("GET /api/v1/tasks does not list handle-webhook")
					return nil
				}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				fromCLI, fromHTTP := tc.cli(t), tc.http(t)
				if a, b := names(fromCLI), names(fromHTTP); !slices.Equal(a, b) {
					t.Fatalf("field names differ:\n  CLI  %v\n  HTTP %v", a, b)
				}
				for k, v := range fromCLI {
					if slices.Contains(tc.volatile, k) {
						continue
					}
					if !sameValue(v, fromHTTP[k]) {
						t.Errorf("%q differs: CLI %v, HTTP %v", k, v, fromHTTP[k])
					}
				}
			})
		}
	})
}

func object(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not a JSON object: %v\n%s", err, raw)
	}
	return m
}

// names lists an object's field names, nested ones as "parent.child" (the
// elements of an array under "parent[]"), sorted.
func names(m map[string]any) []string {
	var out []string
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, y := range x {
				out = append(out, prefix+k)
				walk(prefix+k+".", y)
			}
		case []any:
			for _, y := range x {
				walk(prefix[:len(prefix)-1]+"[].", y)
			}
		}
	}
	walk("", m)
	slices.Sort(out)
	return slices.Compact(out)
}

// sameValue compares two JSON values; times compare as instants, whatever
// their zone.
func sameValue(a, b any) bool {
	if sa, ok := a.(string); ok {
		if sb, ok := b.(string); ok {
			ta, errA := time.Parse(time.RFC3339Nano, sa)
			tb, errB := time.Parse(time.RFC3339Nano, sb)
			if errA == nil && errB == nil {
				return ta.Equal(tb)
			}
		}
	}
	return reflect.DeepEqual(a, b)
}
