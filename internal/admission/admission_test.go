package admission_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

type in struct {
	ID string `json:"id"`
}

var (
	keyed   = task.Must[in, struct{}]("keyed", task.Options{Idempotency: task.Status(`"k:" + input.id`, time.Hour).WithRetain(time.Minute)})
	unkeyed = task.Must[in, struct{}]("unkeyed", task.Options{Retries: 2})
	cfg     = admission.Config{
		Limits:    admission.Limits{MaxInputBytes: 64, MaxMetadataBytes: 32, MaxInputDepth: 3},
		Retention: time.Hour, MaxSignals: 5,
	}
)

// Every trigger, with a key or without, meets the same limits, in the same
// order: size before depth before JSON before the key.
func TestAdmitAppliesEveryLimitToEveryTask(t *testing.T) {
	for _, def := range []*task.Definition{keyed.Definition(), unkeyed.Definition()} {
		for _, c := range []struct {
			name        string
			input, meta string
			check       func(error) bool
		}{
			{"input too large", `{"id":"` + strings.Repeat("x", 64) + `"}`, "", isLimit(admission.FieldInput, 64)},
			{"metadata too large", `{"id":"a"}`, `{"m":"` + strings.Repeat("x", 32) + `"}`, isLimit(admission.FieldMetadata, 32)},
			{"input too deep", `{"id":"a","d":{"e":{"f":{}}}}`, "", isDepth},
			{"metadata too deep", `{"id":"a"}`, `{"d":{"e":{"f":{}}}}`, isDepth},
			{"metadata not an object", `{"id":"a"}`, `[1]`, func(err error) bool { return err != nil }},
			{"input not JSON", `{"id":`, "", func(err error) bool { return err != nil }},
		} {
			_, err := cfg.Admit(admission.Trigger{Def: def, Input: []byte(c.input), Metadata: []byte(c.meta), Now: time.Unix(1, 0)})
			if !c.check(err) {
				t.Errorf("%s, %s: Admit = %v", def.Name, c.name, err)
			}
		}
	}
}

func isLimit(field string, limit int) func(error) bool {
	return func(err error) bool {
		var le *admission.LimitError
		return errors.As(err, &le) && le.Field == field && le.Limit == limit
	}
}

func isDepth(err error) bool {
	var ie *idempotency.Error
	var ae *admission.InvalidError
	return (errors.As(err, &ie) && ie.Kind == idempotency.ErrInput && strings.Contains(ie.Message, "limit of 3 levels")) ||
		(errors.As(err, &ae) && strings.Contains(ae.Problem, "limit of 3 levels"))
}

// An admitted trigger carries its task's settings and its key into the
// enqueue parameters; a task without a key is not deduplicated.
func TestAdmitBuildsTheEnqueueParameters(t *testing.T) {
	now := time.Unix(100, 0)
	p, err := cfg.Admit(admission.Trigger{Def: keyed.Definition(), Input: []byte(`{"id":"A-1"}`), Policy: engine.PolicySignal, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key != "k:A-1" || p.Strategy != task.StrategyStatus || p.Hold != time.Hour || p.Retain != time.Minute ||
		p.RunID == "" || p.SignalID == "" || !p.Now.Equal(now) || p.Retention != time.Hour || p.MaxSignals != 5 || string(p.Meta) != "{}" {
		t.Fatalf("keyed params = %+v", p)
	}
	p, err = cfg.Admit(admission.Trigger{Def: unkeyed.Definition(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key != "" || p.Strategy != engine.StrategyNone || p.Retries != 2 || string(p.Input) != "{}" || p.SignalID != "" {
		t.Fatalf("unkeyed params = %+v", p)
	}
}

// A key expression that fails is an idempotency *task.KeyError wrapping the
// expression's error, and nothing is built.
func TestAdmitWrapsKeyErrors(t *testing.T) {
	p, err := cfg.Admit(admission.Trigger{Def: keyed.Definition(), Input: []byte(`{"other":1}`)})
	var ke *task.KeyError
	if p != nil || !errors.As(err, &ke) || ke.Kind != task.KeyIdempotency {
		t.Fatalf("Admit with no id = %v, %v; want a *KeyError", p, err)
	}
}

// An event is checked once for all its tasks, and must be objects.
func TestCheckEvent(t *testing.T) {
	if err := cfg.CheckEvent([]byte(`{"id":"a"}`), nil); err != nil {
		t.Fatalf("a good event: %v", err)
	}
	if err := cfg.CheckEvent([]byte(`{"id":"`+strings.Repeat("x", 64)+`"}`), nil); !isLimit(admission.FieldInput, 64)(err) {
		t.Fatalf("a large event: %v", err)
	}
	var ie *admission.InvalidError
	if err := cfg.CheckEvent([]byte(`"text"`), nil); !errors.As(err, &ie) || !strings.Contains(ie.Problem, "a string") {
		t.Fatalf("a string payload: %v", err)
	}
}

func TestJSONKind(t *testing.T) {
	for first, want := range map[byte]string{'[': "an array", '"': "a string", 't': "a boolean", 'f': "a boolean", 'n': "null", '1': "a number", '-': "a number"} {
		if got := admission.JSONKind(first); got != want {
			t.Errorf("JSONKind(%q) = %q, want %q", first, got, want)
		}
	}
}

// A rate limit key that fails refuses the trigger with a
// rate limit *task.KeyError naming the limit, before anything is built.
func TestAdmitRefusesAFailingRateLimitKey(t *testing.T) {
	tk := task.Must[map[string]any, struct{}]("limited", task.Options{
		RateLimits: []task.RateLimit{{Name: "per-tenant", Limit: 5, Period: time.Second, Key: "input.tenant"}},
	})
	p, err := cfg.Admit(admission.Trigger{Def: tk.Definition(), Input: []byte(`{"id":"1"}`)})
	var rk *task.KeyError
	if p != nil || !errors.As(err, &rk) || rk.Kind != task.KeyRateLimit || rk.Limit != "per-tenant" {
		t.Fatalf("Admit without a tenant = %v, %v; want a rate limit *task.KeyError", p, err)
	}
	if p, err := cfg.Admit(admission.Trigger{Def: tk.Definition(), Input: []byte(`{"tenant":"acme"}`)}); err != nil || p == nil {
		t.Fatalf("Admit with a tenant = %v, %v", p, err)
	}
}

// An event whose payload a subscribed task's rate limit key fails on
// records the error for that task, as a failed idempotency key is, and
// still makes the other tasks' runs.
func TestBuildEventRecordsAFailingRateLimitKey(t *testing.T) {
	limited := task.Must[map[string]any, struct{}]("limited", task.Options{
		RateLimits: []task.RateLimit{{Name: "per-tenant", Limit: 5, Period: time.Second, Key: "input.tenant"}},
	})
	plain := task.Must[map[string]any, struct{}]("plain", task.Options{})
	p, err := cfg.BuildEvent(admission.Event{Key: "order.paid", Payload: []byte(`{"id":"1"}`)},
		[]admission.Subscriber{{Name: "limited", Def: limited.Definition()}, {Name: "plain", Def: plain.Definition()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 2 || p.Tasks[0].Run != nil || !strings.HasPrefix(p.Tasks[0].Error, `rate limit "per-tenant" key: `) ||
		p.Tasks[1].Run == nil {
		t.Fatalf("tasks = %+v; want the limited task's error recorded and the plain task's run", p.Tasks)
	}
}

// A trigger whose concurrency expression fails on it is refused with a
// typed error naming the expression, which wraps the expression's own.
func TestAdmitRefusesATriggerWithoutAConcurrencyGroup(t *testing.T) {
	grouped := task.Must[map[string]any, struct{}]("grouped", task.Options{Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}}})
	_, err := cfg.Admit(admission.Trigger{Def: grouped.Definition(), Input: []byte(`{"id":"a"}`), Now: time.Unix(1, 0)})
	var ge *task.KeyError
	if !errors.As(err, &ge) || ge.Kind != task.KeyConcurrency || ge.Expression != "input.tenant" || !errors.Is(err, idempotency.ErrEval) || !strings.Contains(err.Error(), `"input.tenant"`) {
		t.Fatalf("Admit = %v, want a concurrency *task.KeyError naming input.tenant", err)
	}
	if _, err := cfg.Admit(admission.Trigger{Def: grouped.Definition(), Input: []byte(`{"tenant":"acme"}`), Now: time.Unix(1, 0)}); err != nil {
		t.Fatalf("Admit with a group = %v", err)
	}
}

// An event whose payload gives a subscribed task no concurrency group
// makes no run of that task and records why, as a failed key does; the
// other tasks' runs are made.
func TestBuildEventRecordsAFailedConcurrencyGroup(t *testing.T) {
	grouped := task.Must[map[string]any, struct{}]("grouped", task.Options{Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}}})
	p, err := cfg.BuildEvent(admission.Event{Key: "e", Payload: []byte(`{"id":"a"}`), Metadata: []byte(`{}`), Now: time.Unix(1, 0)},
		[]admission.Subscriber{{Name: "grouped", Def: grouped.Definition()}, {Name: "unkeyed", Def: unkeyed.Definition()}})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Tasks) != 2 || p.Tasks[0].Run != nil || !strings.Contains(p.Tasks[0].Error, `concurrency group "input.tenant"`) || p.Tasks[1].Run == nil {
		t.Fatalf("tasks = %+v", p.Tasks)
	}
}

// A child's key is its parent's run ID and its name, then the key its task
// derives; its task's strategy holds it, or the status strategy for a task
// without an expression.
func TestChildKeyComesFromItsParent(t *testing.T) {
	now := time.Unix(1, 0)
	p, err := cfg.Admit(admission.Trigger{Def: keyed.Definition(), Input: []byte(`{"id":"7"}`), Now: now,
		Parent: "run-1", ChildName: "charge"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key != "taskq:child:run-1/charge/k:7" || p.Strategy != task.StrategyStatus || p.Hold != time.Hour || p.Retain != time.Minute {
		t.Fatalf("keyed child = key %q, %s hold %s retain %s", p.Key, p.Strategy, p.Hold, p.Retain)
	}
	if got := engine.ParentOf(p.Key); got != "run-1" {
		t.Fatalf("ParentOf = %q", got)
	}
	p, err = cfg.Admit(admission.Trigger{Def: unkeyed.Definition(), Input: []byte(`{"id":"7"}`), Now: now,
		Parent: "run-1", ChildName: "#0", Schedule: &admission.Schedule{In: ptr(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Key != "taskq:child:run-1/#0" || p.Strategy != task.StrategyStatus || p.Hold != admission.ChildHold+time.Minute {
		t.Fatalf("unkeyed child = key %q, %s hold %s", p.Key, p.Strategy, p.Hold)
	}
}

func ptr[T any](v T) *T { return &v }
