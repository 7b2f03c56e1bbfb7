package task_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

func TestDefinitionValidation(t *testing.T) {
	cases := []struct {
		name  string
		task  string
		opts  task.Options
		field string
	}{
		{"bad name", "has space", task.Options{}, "name"},
		{"negative retries", "t", task.Options{Retries: -1}, "retries"},
		{"too many retries", "t", task.Options{Retries: task.RetriesMax + 1}, "retries"},
		{"zero ttl", "t", task.Options{Idempotency: task.TTL("input.id", 0)}, "ttl"},
		{"ttl over max", "t", task.Options{Idempotency: task.TTL("input.id", task.DurationMax+time.Second)}, "ttl"},
		{"zero fallback", "t", task.Options{Idempotency: task.Status("input.id", 0)}, "fallback_ttl"},
		{"retain on ttl", "t", task.Options{Idempotency: &task.Idempotency{Expression: "input.id", Strategy: task.StrategyTTL, TTL: time.Second, Retain: time.Second}}, "retain"},
		{"negative retain", "t", task.Options{Idempotency: task.Status("input.id", time.Minute).WithRetain(-time.Second)}, "retain"},
		{"retain over max", "t", task.Options{Idempotency: task.Status("input.id", time.Minute).WithRetain(task.RetainMax + time.Second)}, "retain"},
		{"unknown strategy", "t", task.Options{Idempotency: &task.Idempotency{Expression: "input.id", Strategy: "forever"}}, "strategy"},
		{"unknown policy", "t", task.Options{OnConflict: "ignore"}, "on_conflict"},
		{"bad backoff", "t", task.Options{Backoff: task.Backoff{Initial: time.Second, Factor: 0.5}}, "backoff"},
		{"bad expression", "t", task.Options{Idempotency: task.TTL("input.", time.Minute)}, "expression"},
		{"negative replicas", "t", task.Options{Durability: &task.Durability{Replicas: -1}}, "durability"},
		{"durability timeout over max", "t", task.Options{Durability: &task.Durability{Replicas: 1, Timeout: task.DurabilityTimeoutMax + time.Second}}, "durability"},
		{"durability timeout under 1ms", "t", task.Options{Durability: &task.Durability{Replicas: 1, Timeout: time.Microsecond}}, "durability"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := task.NewDefinition(tc.task, tc.opts)
			var ce *task.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, task.ErrInvalidConfig) {
				t.Fatalf("got %v, want a *ConfigError", err)
			}
			if ce.Field != tc.field || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("error %q names field %q, want %q", err, ce.Field, tc.field)
			}
		})
	}
	_, err := task.NewDefinition("t", task.Options{Idempotency: task.TTL("input.", time.Minute)})
	if !errors.Is(err, idempotency.ErrCompile) {
		t.Fatalf("a bad expression does not unwrap to the compile error: %v", err)
	}
}

func TestSpecRoundTrip(t *testing.T) {
	def, err := task.NewDefinition("orders.charge", task.Options{
		Idempotency: task.Status(`"order:" + input.id`, time.Hour).WithRetain(time.Minute),
		Retries:     3, Timeout: 30 * time.Second, OnEvents: []string{"order.created"},
		OnConflict: task.ConflictAttach,
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := taskdef.Spec(def)
	back, err := taskdef.Definition(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if taskdef.Hash(taskdef.Spec(back)) != taskdef.Hash(spec) {
		t.Fatalf("round trip changed the spec: %+v vs %+v", taskdef.Spec(back), spec)
	}
	key, err := back.Key([]byte(`{"id":"7"}`), nil)
	if err != nil || key != "order:7" {
		t.Fatalf("rebuilt definition derives %q, %v", key, err)
	}
	other, _ := task.NewDefinition("orders.charge", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
	if taskdef.Hash(taskdef.Spec(other)) == taskdef.Hash(spec) {
		t.Fatal("different definitions share a hash")
	}
}

// A task's durability survives the round trip through its registered spec,
// "explicitly none" included, and a task without one registers the spec it
// did before durability existed (so its hash is unchanged).
func TestSpecCarriesDurability(t *testing.T) {
	for _, d := range []*task.Durability{
		{Replicas: 2, Timeout: 50 * time.Millisecond, LocalFsync: true},
		{},
	} {
		def, err := task.NewDefinition("orders.charge", task.Options{Durability: d})
		if err != nil {
			t.Fatal(err)
		}
		back, err := taskdef.Definition(taskdef.Spec(def), nil)
		if err != nil {
			t.Fatal(err)
		}
		if back.Durability == nil || *back.Durability != *d {
			t.Fatalf("durability %+v came back as %+v", *d, back.Durability)
		}
	}
	plain, err := task.NewDefinition("orders.charge", task.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(taskdef.Spec(plain))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "durability") {
		t.Fatalf("a task without durability registers %s", b)
	}
	if back, _ := taskdef.Definition(taskdef.Spec(plain), nil); back.Durability != nil {
		t.Fatalf("no durability came back as %+v", *back.Durability)
	}
}

func TestBackoffDelay(t *testing.T) {
	b := task.Backoff{Initial: 100 * time.Millisecond, Max: time.Second, Factor: 2}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		if got := taskdef.Delay(b, i+1); got != w {
			t.Fatalf("delay after failure %d = %v, want %v", i+1, got, w)
		}
	}
	b.Jitter = 0.5
	for i := 0; i < 100; i++ {
		if d := taskdef.Delay(b, 1); d < 100*time.Millisecond || d > 150*time.Millisecond {
			t.Fatalf("jittered delay %v outside [100ms, 150ms]", d)
		}
	}
}

func TestNoExpressionMeansNoKey(t *testing.T) {
	def, err := task.NewDefinition("plain", task.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if def.Idempotency != nil {
		t.Fatal("a task without an expression is deduplicated")
	}
	if k, err := def.Key([]byte(`{"id":1}`), nil); k != "" || err != nil {
		t.Fatalf("key = %q, %v", k, err)
	}
}

// Concurrency limits are validated and compiled with the task, each error
// naming its limit; they are carried by the spec and rebuilt from it; each
// expression yields its own group.
func TestConcurrencyOption(t *testing.T) {
	ok := task.Concurrency{Expression: "input.tenant", MaxRuns: 1}
	for _, c := range []struct {
		cs    []task.Concurrency
		field string
	}{
		{[]task.Concurrency{{Expression: "input.tenant", MaxRuns: 0}}, "concurrency[0].max_runs"},
		{[]task.Concurrency{ok, {Expression: "input.tenant", MaxRuns: task.ConcurrencyMaxRunsMax + 1}}, "concurrency[1].max_runs"},
		{[]task.Concurrency{ok, {Expression: "input.tenant", MaxRuns: 1, Strategy: "fifo"}}, "concurrency[1].strategy"},
		{[]task.Concurrency{{Expression: "input.", MaxRuns: 1}}, "concurrency[0].expression"},
		{make([]task.Concurrency, task.ConcurrencyLimitsMax+1), "concurrency"},
	} {
		_, err := task.NewDefinition("t", task.Options{Concurrency: c.cs})
		var ce *task.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v, want a task.ConfigError on %s", c.cs, err, c.field)
		}
	}
	d, err := task.NewDefinition("t", task.Options{Concurrency: []task.Concurrency{
		{Expression: `"t:" + input.tenant`, MaxRuns: 2},
		{Expression: `input.region`, MaxRuns: 5, Strategy: task.CancelNewest},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Concurrency[0].Strategy != task.GroupRoundRobin || d.Concurrency[1].Strategy != task.CancelNewest {
		t.Fatalf("strategies = %q, %q", d.Concurrency[0].Strategy, d.Concurrency[1].Strategy)
	}
	if g, err := taskdef.ConcurrencyGroups(d, []byte(`{"tenant":"acme","region":"eu"}`), nil); err != nil || len(g) != 2 || g[0] != "t:acme" || g[1] != "eu" {
		t.Fatalf("groups = %q, %v", g, err)
	}
	_, err = taskdef.ConcurrencyGroups(d, []byte(`{"tenant":"acme"}`), nil)
	var ke *task.KeyError
	if !errors.As(err, &ke) || ke.Kind != task.KeyConcurrency || ke.Expression != "input.region" {
		t.Fatalf("a missing field of the second expression: %v; want a *task.KeyError naming it", err)
	}
	back, err := taskdef.Definition(taskdef.Spec(d), nil)
	if err != nil || len(back.Concurrency) != 2 || back.Concurrency[1] != d.Concurrency[1] || taskdef.Hash(taskdef.Spec(back)) != taskdef.Hash(taskdef.Spec(d)) {
		t.Fatalf("from spec: %+v, %v", back, err)
	}
	plain, _ := task.NewDefinition("t", task.Options{})
	if g, err := taskdef.ConcurrencyGroups(plain, []byte(`{}`), nil); g != nil || err != nil || taskdef.Spec(plain).Concurrency != nil {
		t.Fatalf("a task without concurrency: %q, %v", g, err)
	}
	if !errors.Is(task.ErrConcurrencyCancelled, task.ErrRunCancelled) {
		t.Fatal("task.ErrConcurrencyCancelled must match task.ErrRunCancelled")
	}
}
