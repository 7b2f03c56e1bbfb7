package httpapi

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/webhook"
	"github.com/taskq/taskq/pkg/task"
)

// Settings of TestContractFuzz. `make fuzz-http` runs it longer.
const (
	fuzzRequestsEnv = "TASKQ_HTTP_FUZZ_REQUESTS" // requests to send (default 600, 200 with -short)
	fuzzSeedEnv     = "TASKQ_HTTP_FUZZ_SEED"     // the generator's seed (default: the clock's)
)

// TestContractFuzz sends requests generated from api/openapi.yaml, valid
// ones from the schemas and mutated ones (fields missing, extra or of the
// wrong type, nulls, huge strings, deep nesting, invalid UTF-8, lone
// surrogates, hostile path values, other methods, no token), to every
// operation, against real Redis. Each answer is checked against the
// document by callWith (a documented status, a body matching its schema,
// errors as JSON); on top of that no answer may be a 5xx while Redis is
// up, and no idempotency key may be claimed by two runs created while it
// was held (two 201s for one key, supersede aside).
func TestContractFuzz(t *testing.T) {
	t.Parallel()
	n := 600
	if testing.Short() {
		n = 200
	}
	if v := os.Getenv(fuzzRequestsEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("%s=%q: want a count of requests", fuzzRequestsEnv, v)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(fuzzSeedEnv); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("%s=%q: want a number", fuzzSeedEnv, v)
		}
	}
	t.Logf("%d requests, seed %d (rerun with %s=%d)", n, seed, fuzzSeedEnv, seed)

	doc, _, err := loadContract()
	if err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(t.TempDir(), "webhooks.yaml")
	writeFile(t, hooks, []byte(`sources: [{name: fz-hook, signature: github, secrets: [{value: `+fuzzHookSecret+`}],
	  key: 'headers["x-fz-event"]', deliveryId: 'headers["x-fz-delivery"]'}]`))
	sources, err := webhook.Load(hooks, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, redistest.Real(t), envOptions{server: Options{MaxBodyBytes: 256 << 10, MaxBatch: 5, MaxWait: 20 * time.Millisecond, Webhooks: sources}})
	e.register(task.Spec{Name: "fz-ttl", Expression: `"fz:" + string(input.id)`, Strategy: task.StrategyTTL, TTLMs: 600000, OnEvents: []string{"fz.evt"}})
	e.register(task.Spec{Name: "fz-status", Expression: `"fzs:" + string(input.id)`, Strategy: task.StrategyStatus, FallbackTTLMs: 600000})
	f := &fuzzer{t: t, e: e, doc: doc, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), created: map[string]bool{}, released: map[string]bool{}}
	for _, p := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(p).Operations() {
			// Operations that take a body or parameters have more to try.
			weight := 1 + len(op.Parameters)
			if op.RequestBody != nil {
				weight += 4
			}
			for range weight {
				f.ops = append(f.ops, fuzzOp{method: method, path: p, op: op})
			}
		}
	}
	sort.Slice(f.ops, func(i, j int) bool { return f.ops[i].method+f.ops[i].path < f.ops[j].method+f.ops[j].path })
	// Something to find: a run of each task, an event, keys held.
	f.send(http.MethodPost, "/api/v1/tasks/fz-ttl/runs", `{"input":{"id":1}}`, true)
	f.send(http.MethodPost, "/api/v1/tasks/fz-status/runs", `{"input":{"id":1}}`, true)
	f.send(http.MethodPost, "/api/v1/events", `{"key":"fz.evt","payload":{"id":2}}`, true)
	f.send(http.MethodPost, "/api/v1/webhooks/fz-hook", `{"id":3}`, true)

	statuses := map[string]map[int]int{}
	for range n {
		op := f.ops[f.rnd.IntN(len(f.ops))]
		status := f.request(op)
		if statuses[op.op.OperationID] == nil {
			statuses[op.op.OperationID] = map[int]int{}
		}
		statuses[op.op.OperationID][status]++
		if t.Failed() {
			t.Fatalf("stopped at the first broken answer (seed %d)", seed)
		}
	}
	for id, by := range statuses {
		t.Logf("%-12s %v", id, by)
	}
	f.checkOneOwnerPerKey()
}

type fuzzOp struct {
	method, path string
	op           *openapi3.Operation
}

type fuzzer struct {
	t   *testing.T
	e   *env
	doc *openapi3.T
	rnd *rand.Rand
	ops []fuzzOp
	// What answers named, to aim later requests at.
	runs, events, keys []string
	// created holds the runs answered 201 without superseding another
	// (true), or created by an event.
	created map[string]bool
	// released holds the keys a DELETE /keys/{key} released: a later run
	// may claim them again.
	released map[string]bool
}

func (f *fuzzer) pick(options ...string) string { return options[f.rnd.IntN(len(options))] }

func (f *fuzzer) chance(p float64) bool { return f.rnd.Float64() < p }

// request sends one generated request for op and returns its status.
func (f *fuzzer) request(op fuzzOp) int {
	method := op.method
	if f.chance(0.05) {
		method = f.pick(http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch)
	}
	path := op.path
	for _, p := range op.op.Parameters {
		if p.Value.In == "path" {
			path = strings.Replace(path, "{"+p.Value.Name+"}", f.pathValue(p.Value.Name), 1)
		}
	}
	if op.op.OperationID == "getRunResult" && f.chance(0.8) {
		path += "?wait=" + f.pick("1ns", "1us", "100us", "1ms", "5ms", "0", "3", "1m", "-1s", "soon", "99999999999999999999", "%FF", "")
	}
	body := ""
	if op.op.RequestBody != nil || f.chance(0.05) {
		body = f.body(op)
	}
	return f.send(method, path, body, false)
}

// fuzzHookSecret signs the fuzzer's webhooks to source fz-hook.
const fuzzHookSecret = "fz-hook-secret-0123456789"

// send sends a request (with the token and application/json, unless a
// mutation drops them) and learns run IDs, event IDs and keys from the
// answer. A 5xx fails the test, but for durability_not_reached. A webhook
// is signed with the source's secret, its headers name the event
// (mostly the one fz-ttl is subscribed to) and a delivery; mutations
// drop or spoil the signature and the headers.
func (f *fuzzer) send(method, path, body string, plain bool) int {
	h := map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"}
	if strings.HasPrefix(path, webhookPrefix) {
		h["X-Hub-Signature-256"] = githubSig(fuzzHookSecret, body)
		h["X-Fz-Event"] = f.pick("fz.evt", "fz.evt", "other.evt", "bad key with spaces")
		h["X-Fz-Delivery"] = f.pick("d1", "d2", "d3")
		switch {
		case f.chance(0.05):
			h["X-Hub-Signature-256"] = noHeader
		case f.chance(0.05):
			h["X-Hub-Signature-256"] = githubSig("not-"+fuzzHookSecret, body)
		case f.chance(0.05):
			h["X-Hub-Signature-256"] = f.pick("sha256=", "sha256=zz", "md5=00", strings.Repeat("s", 5000))
		case f.chance(0.05):
			h["X-Fz-Event"] = noHeader
		case f.chance(0.05):
			h["X-Fz-Delivery"] = f.pick(noHeader, strings.Repeat("d", 300))
		}
	}
	if !plain {
		switch {
		case f.chance(0.03):
			h["Authorization"] = noHeader
		case f.chance(0.03):
			h["Authorization"] = "Bearer not-" + testToken
		case f.chance(0.03):
			h["Content-Type"] = f.pick(noHeader, "text/plain", "application/json; charset=latin1", "application/cloudevents+json")
		}
	}
	var b any
	if body != "" || method == http.MethodPost {
		b = body
	}
	r := f.e.callWith(method, path, b, h)
	// A durable trigger whose replicas fall short answers 504 with the run
	// it wrote: expected where Redis has fewer replicas than the fuzzer asks.
	notDurable := r.status == http.StatusGatewayTimeout && r.str("error") == CodeDurabilityNotReached
	if r.status >= 500 && !notDurable {
		f.t.Errorf("%s %s %.300q: %d with Redis up: %.300s", method, clip(path), body, r.status, r.raw)
	}
	f.learn(method, path, r)
	return r.status
}

func (f *fuzzer) learn(method, path string, r response) {
	var v any
	_ = json.Unmarshal(r.raw, &v)
	trigger := method == http.MethodPost && strings.HasPrefix(path, "/api/v1/tasks/") && strings.HasSuffix(path, "/runs")
	var walk func(x any, depth int)
	walk = func(x any, depth int) {
		switch x := x.(type) {
		case []any:
			for _, y := range x {
				walk(y, depth+1)
			}
		case map[string]any:
			id, _ := x["runId"].(string)
			if id != "" && !slices.Contains(f.runs, id) {
				f.runs = append(f.runs, id)
			}
			if k, _ := x["idempotencyKey"].(string); k != "" && !slices.Contains(f.keys, k) {
				f.keys = append(f.keys, k)
			}
			if ev, _ := x["id"].(string); ev != "" && strings.HasPrefix(path, "/api/v1/events") && depth <= 2 && !slices.Contains(f.events, ev) {
				f.events = append(f.events, ev)
			}
			superseded := x["supersededRunId"] != nil
			switch {
			case trigger && r.status == http.StatusCreated && depth == 0 && id != "":
				f.created[id] = !superseded
			case trigger && x["status"] == float64(http.StatusCreated) && id != "",
				// A run of a batch created, but short of its durability.
				trigger && x["error"] == CodeDurabilityNotReached && x["outcome"] == "created" && id != "":
				f.created[id] = !superseded
			case x["outcome"] == "created" && id != "":
				f.created[id] = true
			}
			for _, y := range x {
				walk(y, depth+1)
			}
		}
	}
	if r.status < 300 {
		walk(v, 0)
	}
	if method == http.MethodDelete && r.status == http.StatusOK && r.str("key") != "" {
		f.released[r.str("key")] = true
	}
}

// pathValue is a value for a path parameter: one that exists, one that
// does not, or a hostile one, percent-encoded or raw.
func (f *fuzzer) pathValue(name string) string {
	known := map[string][]string{"id": append(append([]string{}, f.runs...), f.events...), "task": {"fz-ttl", "fz-status"}, "key": f.keys,
		"source": {"fz-hook", "fz-hook"}}[name]
	switch r := f.rnd.IntN(10); {
	case r < 5 && len(known) > 0:
		return url.PathEscape(known[f.rnd.IntN(len(known))])
	case r < 6:
		return f.pick("a%2Fb", "a/b", "webhook:https://shop.example/evt/1", "a/../b", "./x", "..", ".")
	case r < 7:
		return f.pick("", "%00", "%0D%0Ainjected: 1", "%FF", "%C3", "%E2%82", "%25", "%2e%2e", "%20")
	case r < 8:
		return strings.Repeat("s", 32<<10)
	}
	return url.PathEscape(fmt.Sprintf("no-such-%s-%d", name, f.rnd.IntN(1000)))
}

// body is a request body for op: valid from its schema, or mutated.
func (f *fuzzer) body(op fuzzOp) string {
	var schema *openapi3.Schema
	if op.op.RequestBody != nil {
		if mt := op.op.RequestBody.Value.Content.Get("application/json"); mt != nil && mt.Schema != nil {
			schema = mt.Schema.Value
		}
	}
	var v any = map[string]any{"input": map[string]any{"id": 1}}
	if schema != nil {
		v = f.value(schema, 0, "")
	}
	if f.chance(0.5) {
		v = f.mutate(v, 0)
	}
	raw, _ := json.Marshal(v)
	s := string(raw)
	switch r := f.rnd.IntN(40); {
	case r == 0:
		return ""
	case r == 1:
		return s[:f.rnd.IntN(len(s)+1)]
	case r == 2:
		return s + " {}"
	case r == 3 && strings.Contains(s, `":"`):
		// Invalid UTF-8 in the first string value.
		return strings.Replace(s, `":"`, "\":\"\xff\xfe", 1)
	case r == 4 && strings.Contains(s, `":"`):
		return strings.Replace(s, `":"`, `":"\ud800`, 1)
	case r == 5:
		return `{"input":` + strings.Repeat(`{"a":`, 300) + "1" + strings.Repeat("}", 300) + "}"
	case r == 6:
		return f.pick(`null`, `[]`, `"x"`, `1e999`, `{"runs":[`+strings.Repeat(`{},`, 10)+`{}]}`, `{"events":[`+strings.Repeat(`{"key":"k"},`, 10)+`{"key":"k"}]}`)
	}
	return s
}

// value generates a valid value of schema. Free-form objects (a run's
// input, an event's payload) get a small "id" so that keys repeat.
func (f *fuzzer) value(s *openapi3.Schema, depth int, field string) any {
	if len(s.OneOf) > 0 {
		return f.value(s.OneOf[f.rnd.IntN(len(s.OneOf))].Value, depth, field)
	}
	if s.Nullable && f.chance(0.1) {
		return nil
	}
	if len(s.Enum) > 0 {
		return s.Enum[f.rnd.IntN(len(s.Enum))]
	}
	switch {
	case s.Type.Is("object"):
		if len(s.Properties) == 0 {
			obj := map[string]any{"id": f.pick("1", "2", "3")}
			if f.chance(0.3) {
				obj["id"] = f.rnd.IntN(3) + 1
			}
			if f.chance(0.2) {
				obj["note"] = f.pick("é", "\ufffd", "😀", "x y", "")
			}
			return obj
		}
		obj := map[string]any{}
		names := make([]string, 0, len(s.Properties))
		for name := range s.Properties {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if slices.Contains(s.Required, name) || f.chance(0.5) {
				obj[name] = f.value(s.Properties[name].Value, depth+1, name)
			}
		}
		return obj
	case s.Type.Is("array"):
		out := []any{}
		for range 1 + f.rnd.IntN(3) {
			out = append(out, f.value(s.Items.Value, depth+1, field))
		}
		return out
	case s.Type.Is("string"):
		if field == "key" {
			return f.pick("fz.evt", "fz.evt", "other.evt")
		}
		return f.pick("a", "fz:1", "é")
	case s.Type.Is("integer"):
		return f.rnd.IntN(10)
	case s.Type.Is("number"):
		return f.rnd.Float64()
	case s.Type.Is("boolean"):
		return f.chance(0.5)
	}
	// Any JSON value (a signal's payload).
	return []any{nil, 1, "s", map[string]any{"a": []any{1}}, true}[f.rnd.IntN(5)]
}

// mutate breaks a valid value: a field dropped, added, nulled, of the wrong
// type, huge, or deeply nested.
func (f *fuzzer) mutate(v any, depth int) any {
	obj, ok := v.(map[string]any)
	if !ok || depth > 3 {
		return f.pick2([]any{nil, 7, "s", []any{}, map[string]any{}, strings.Repeat("h", 40<<10), true})
	}
	names := make([]string, 0, len(obj))
	for name := range obj {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) == 0 || f.chance(0.2) {
		obj[f.pick("extra", "inptu", "runs", "events", "key", "payload", "input")] = f.pick2([]any{1, "x", map[string]any{}, []any{map[string]any{}}})
		return obj
	}
	name := names[f.rnd.IntN(len(names))]
	switch f.rnd.IntN(4) {
	case 0:
		delete(obj, name)
	case 1:
		obj[name] = f.mutate(obj[name], depth+1)
	default:
		obj[name] = f.pick2([]any{nil, 7, 1e300, "s", []any{1}, map[string]any{"deep": map[string]any{"er": []any{}}}, strings.Repeat("h", 40<<10), false})
	}
	return obj
}

func (f *fuzzer) pick2(options []any) any { return options[f.rnd.IntN(len(options))] }

// checkOneOwnerPerKey reads every run created by a 201 (or an event) and
// fails if two that superseded nothing share an idempotency key: the
// second was created while the first held it (ttl keys are held for 10
// minutes; status keys until their run is cancelled, as no worker runs).
func (f *fuzzer) checkOneOwnerPerKey() {
	byKey := map[string][]string{}
	for id, plain := range f.created {
		r := f.e.call(http.MethodGet, "/api/v1/runs/"+url.PathEscape(id), nil).expect(f.t, http.StatusOK)
		// Cancelling releases a status key (not a ttl one).
		released := r.str("status") == "cancelled" && r.str("strategy") == string(task.StrategyStatus)
		if k := r.str("idempotencyKey"); plain && k != "" && !released && !f.released[k] {
			byKey[k] = append(byKey[k], id)
		}
	}
	for k, ids := range byKey {
		if len(ids) > 1 {
			f.t.Errorf("key %q was claimed by %d runs created while it was held: %v", k, len(ids), ids)
		}
	}
	f.t.Logf("%d runs created, %d keys", len(f.created), len(byKey))
}
