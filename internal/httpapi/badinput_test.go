package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Issue test 4: every kind of bad input gets its status code and a message
// naming the problem, in the {error, message} shape, and Redis holds
// nothing from the rejected request.
func TestBadInputIsRejectedAndWritesNothing(t *testing.T) {
	t.Parallel()
	type tc struct {
		name    string
		method  string
		path    string
		body    any
		ctype   string
		status  int
		code    string
		message string // a part of the message that names the problem
		field   string
		index   int // the batch item at fault, when field names one
	}
	many := func(n int, item string) string {
		return `[` + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + `]`
	}
	cases := []tc{
		// The event endpoint.
		{name: "empty body", method: "POST", path: "/api/v1/events", body: "", status: 400, code: CodeEmptyBody, message: "request body is empty"},
		{name: "whitespace body", method: "POST", path: "/api/v1/events", body: "  \n", status: 400, code: CodeEmptyBody, message: "empty"},
		{name: "malformed JSON", method: "POST", path: "/api/v1/events", body: `{"key": "order.paid",}`, status: 400, code: CodeMalformedJSON, message: "not valid JSON"},
		{name: "truncated JSON", method: "POST", path: "/api/v1/events", body: `{"key": "order.paid"`, status: 400, code: CodeMalformedJSON, message: "ends in the middle"},
		{name: "body is an array", method: "POST", path: "/api/v1/events", body: `[{"key":"a"}]`, status: 400, code: CodeMalformedJSON, message: "must be a JSON object, not an array"},
		{name: "data after the object", method: "POST", path: "/api/v1/events", body: `{"key":"a"} {"key":"b"}`, status: 400, code: CodeMalformedJSON, message: "data after"},
		{name: "key of the wrong type", method: "POST", path: "/api/v1/events", body: `{"key": 42}`, status: 400, code: CodeInvalidField, message: `field "key" must be a string, not a number`, field: "key"},
		{name: "events of the wrong type", method: "POST", path: "/api/v1/events", body: `{"events": {"key": "a"}}`, status: 400, code: CodeInvalidField, message: `"events" must be an array, not an object`, field: "events"},
		{name: "unknown field", method: "POST", path: "/api/v1/events", body: `{"key": "a", "data": {}}`, status: 400, code: CodeInvalidField, message: `unknown field "data"`, field: "data"},
		{name: "missing key", method: "POST", path: "/api/v1/events", body: `{"payload": {}}`, status: 400, code: CodeInvalidField, message: `field "key" is required`, field: "key"},
		{name: "empty key", method: "POST", path: "/api/v1/events", body: `{"key": ""}`, status: 400, code: CodeInvalidField, message: "key must not be empty", field: "key"},
		{name: "key with a space", method: "POST", path: "/api/v1/events", body: `{"key": "order paid"}`, status: 400, code: CodeInvalidField, message: "whitespace", field: "key"},
		{name: "payload an array", method: "POST", path: "/api/v1/events", body: `{"key": "a", "payload": [1, 2]}`, status: 400, code: CodeInvalidField, message: `payload must be a JSON object, got an array`, field: "payload"},
		{name: "metadata a string", method: "POST", path: "/api/v1/events", body: `{"key": "a", "metadata": "x"}`, status: 400, code: CodeInvalidField, message: `metadata must be a JSON object, got a string`, field: "metadata"},
		{name: "key and events", method: "POST", path: "/api/v1/events", body: `{"key": "a", "events": [{"key": "b"}]}`, status: 400, code: CodeInvalidField, message: "not both"},
		{name: "empty batch", method: "POST", path: "/api/v1/events", body: `{"events": []}`, status: 400, code: CodeInvalidField, message: `"events" is empty`},
		{name: "too many events", method: "POST", path: "/api/v1/events", body: `{"events": ` + many(4, `{"key":"order.paid","payload":{"orderId":"x"}}`) + `}`, status: 400, code: CodeBatchTooLarge, message: "batch has 4 events, over the limit of 3"},
		{name: "one bad event in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid","payload":{"orderId":"x"}}, {"key":"order.paid","payload":7}]}`, status: 400, code: CodeInvalidField, message: `event #1: payload must be a JSON object, got a number`, field: "events[1].payload", index: 1},
		{name: "event without key in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, {"payload":{}}]}`, status: 400, code: CodeInvalidField, message: `"events[1].key" is required`, field: "events[1].key", index: 1},
		{name: "unknown field in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, {"key":"order.paid","data":{}}]}`, status: 400, code: CodeInvalidField, message: `unknown field "events[1].data"`, field: "events[1].data", index: 1},
		{name: "key of the wrong type in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, {"key":7}]}`, status: 400, code: CodeInvalidField, message: `field "events[1].key" must be a string, not a number`, field: "events[1].key", index: 1},
		{name: "event not an object in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, "order.paid"]}`, status: 400, code: CodeInvalidField, message: `field "events[1]" must be an object, not a string`, field: "events[1]", index: 1},
		{name: "bad key in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, {"key":""}]}`, status: 400, code: CodeInvalidField, message: "event #1: key must not be empty", field: "events[1].key", index: 1},
		{name: "payload over the client's limit in a batch", method: "POST", path: "/api/v1/events", body: `{"events": [{"key":"order.paid"}, {"key":"order.paid","payload":{"pad":"` + strings.Repeat("x", 300) + `"}}]}`, status: 413, code: CodePayloadTooLarge, message: "event #1: payload is", field: "events[1].payload", index: 1},
		{name: "oversized body", method: "POST", path: "/api/v1/events", body: `{"key": "order.paid", "payload": {"pad": "` + strings.Repeat("x", 5000) + `"}}`, status: 413, code: CodeBodyTooLarge, message: "over the limit of 4096 bytes"},
		{name: "not JSON content", method: "POST", path: "/api/v1/events", body: `key=order.paid`, ctype: "application/x-www-form-urlencoded", status: 415, code: CodeUnsupportedMediaType, message: "not JSON"},
		// The trigger endpoint.
		{name: "unknown task", method: "POST", path: "/api/v1/tasks/no-such-task/runs", body: `{"input": {"orderId": "1"}}`, status: 404, code: CodeTaskNotFound, message: `task "no-such-task" is not registered`},
		{name: "trigger with empty body", method: "POST", path: "/api/v1/tasks/charge/runs", body: "", status: 400, code: CodeEmptyBody, message: "empty"},
		{name: "trigger with malformed JSON", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {`, status: 400, code: CodeMalformedJSON, message: "not valid JSON"},
		{name: "input a string", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": "o-1"}`, status: 400, code: CodeInvalidField, message: `"input" must be a JSON object, not a string`, field: "input"},
		{name: "metadata an array", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"orderId": "1"}, "additionalMetadata": []}`, status: 400, code: CodeInvalidField, message: `"additionalMetadata" must be a JSON object, not an array`, field: "additionalMetadata"},
		{name: "unknown trigger field", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"inputs": {}}`, status: 400, code: CodeInvalidField, message: `unknown field "inputs"`, field: "inputs"},
		{name: "priority out of range", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"orderId": "1"}, "priority": 4}`, status: 400, code: CodeInvalidField, message: `"priority" is 4`, field: "priority"},
		{name: "bad conflict policy", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"orderId": "1"}, "onConflict": "ignore"}`, status: 400, code: CodeInvalidField, message: `"onConflict" is "ignore"`, field: "onConflict"},
		{name: "expression fails on the input", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"order": "1"}}`, status: 422, code: CodeIdempotencyKeyError, message: "orderId"},
		{name: "expression yields a number", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"orderId": 1}}`, status: 422, code: CodeIdempotencyKeyError, message: "idempotency"},
		{name: "input over the client's limit", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"orderId": "1", "pad": "` + strings.Repeat("x", 300) + `"}}`, status: 413, code: CodePayloadTooLarge, message: "input is", field: "input"},
		{name: "runs and input", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {}, "runs": [{"input": {}}]}`, status: 400, code: CodeInvalidField, message: "not both"},
		{name: "empty runs", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": []}`, status: 400, code: CodeInvalidField, message: `"runs" is empty`},
		{name: "too many runs", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": ` + many(4, `{"input":{"orderId":"1"}}`) + `}`, status: 400, code: CodeBatchTooLarge, message: "batch has 4 runs, over the limit of 3"},
		{name: "bad run in a batch", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": [{"input": {"orderId": "1"}}, {"input": 5}]}`, status: 400, code: CodeInvalidField, message: `"runs[1].input" must be a JSON object`, field: "runs[1].input", index: 1},
		{name: "unknown field in a run of a batch", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": [{"input": {"orderId": "1"}}, {"inptu": {}}]}`, status: 400, code: CodeInvalidField, message: `unknown field "runs[1].inptu"`, field: "runs[1].inptu", index: 1},
		{name: "run not an object in a batch", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": [1]}`, status: 400, code: CodeInvalidField, message: `field "runs[0]" must be an object, not a number`, field: "runs[0]", index: 0},
		{name: "expression fails on a run of a batch", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"runs": [{"input": {"orderId": "1"}}, {"input": {"id": "2"}}]}`, status: 422, code: CodeIdempotencyKeyError, message: "runs[1]: "},
		{name: "oversized trigger", method: "POST", path: "/api/v1/tasks/charge/runs", body: `{"input": {"pad": "` + strings.Repeat("x", 5000) + `"}}`, status: 413, code: CodeBodyTooLarge, message: "4096 bytes"},
		// Other routes.
		{name: "wait not a duration", method: "GET", path: "/api/v1/runs/r-1/result?wait=soon", status: 400, code: CodeInvalidParameter, message: `"wait" is "soon"`, field: "wait"},
		{name: "negative wait", method: "GET", path: "/api/v1/runs/r-1/result?wait=-1s", status: 400, code: CodeInvalidParameter, message: "must not be negative", field: "wait"},
		{name: "unknown run", method: "GET", path: "/api/v1/runs/r-1", status: 404, code: CodeRunNotFound, message: `run "r-1" does not exist`},
		{name: "result of an unknown run", method: "GET", path: "/api/v1/runs/r-1/result?wait=1s", status: 404, code: CodeRunNotFound, message: `run "r-1"`},
		{name: "unknown event", method: "GET", path: "/api/v1/events/e-1", status: 404, code: CodeEventNotFound, message: `event "e-1"`},
		{name: "key not held", method: "GET", path: "/api/v1/keys/charge:1", status: 404, code: CodeKeyNotFound, message: `"charge:1" is not held`},
		{name: "empty key path", method: "GET", path: "/api/v1/keys/", status: 400, code: CodeInvalidParameter, message: "empty"},
		{name: "unknown route", method: "GET", path: "/api/v1/nothing-here", status: 404, code: CodeNotFound, message: "no route GET /api/v1/nothing-here"},
		{name: "unknown top-level route", method: "GET", path: "/favicon.ico", status: 404, code: CodeNotFound, message: "no route"},
		{name: "wrong method", method: "DELETE", path: "/api/v1/events", status: 405, code: CodeMethodNotAllowed, message: "DELETE is not allowed on /api/v1/events; allowed: GET, POST"},
		{name: "GET on the trigger route", method: "GET", path: "/api/v1/tasks/charge/runs", status: 405, code: CodeMethodNotAllowed, message: "allowed: POST"},
	}
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		e := newEnv(t, b, envOptions{
			server: Options{MaxBodyBytes: 4096, MaxBatch: 3},
			client: client.Options{MaxInputBytes: 256},
		})
		e.register(task.Spec{Name: "charge", Expression: `"charge:" + input.orderId`, Strategy: task.StrategyTTL, TTLMs: 60000, OnEvents: []string{"order.paid"}})
		// The namespace is in use: its partition count is recorded, as its
		// first use by any request would record it.
		if _, err := clientlink.Store(e.c).PartitionCount(context.Background()); err != nil {
			t.Fatal(err)
		}
		before := e.snapshot()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				h := map[string]string{"Authorization": "Bearer " + testToken}
				if c.body != nil {
					h["Content-Type"] = "application/json"
				}
				if c.ctype != "" {
					h["Content-Type"] = c.ctype
				}
				r := e.callWith(c.method, c.path, c.body, h)
				if r.status != c.status || r.str("error") != c.code || !strings.Contains(r.str("message"), c.message) {
					t.Fatalf("got %d %s, want %d with error %q and a message containing %q", r.status, r.raw, c.status, c.code, c.message)
				}
				if c.field != "" && r.str("field") != c.field {
					t.Errorf("field = %q, want %q", r.str("field"), c.field)
				}
				if strings.Contains(c.field, "[") {
					if got, ok := r.body["index"].(float64); !ok || int(got) != c.index {
						t.Errorf("index = %v, want %d", r.body["index"], c.index)
					}
				}
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type = %q", ct)
				}
				if c.status == 405 && r.header.Get("Allow") == "" {
					t.Error("405 without an Allow header")
				}
				if after := e.snapshot(); after != before {
					t.Fatalf("the rejected request wrote to Redis:\nbefore:\n%safter:\n%s", before, after)
				}
			})
		}
	})
}

// ?wait= in whole seconds is cut to MaxWait however large it is; a count
// of seconds past what a Duration holds is not mistaken for a negative one.
func TestParseWait(t *testing.T) {
	t.Parallel()
	s := &Server{opts: Options{MaxWait: 30 * time.Second}}
	for v, want := range map[string]time.Duration{
		"": 0, "0": 0, "5": 5 * time.Second, "500ms": 500 * time.Millisecond, "1m": 30 * time.Second,
		"10000000000": 30 * time.Second, "99999999999999999999": 30 * time.Second,
	} {
		if got, e := s.parseWait(v); e != nil || got != want {
			t.Errorf("wait=%s: got %s, %v; want %s", v, got, e, want)
		}
	}
	for _, v := range []string{"-1", "-1s", "-99999999999999999999", "soon", "1.5"} {
		if _, e := s.parseWait(v); e == nil || e.Code != CodeInvalidParameter || e.Field != "wait" {
			t.Errorf("wait=%s: got %+v, want an invalid_parameter error on wait", v, e)
		}
	}
}
