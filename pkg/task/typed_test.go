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

type Item struct {
	SKU string `json:"sku"`
}

type Order struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer"`
	Items    []Item            `json:"items"`
	Count    int               `json:"count"`
	Labels   map[string]string `json:"labels,omitempty"`
}

// A typed task's expressions are checked against its input's JSON shape
// when it is defined: a typo fails New, naming the position and the fields
// that exist, for the idempotency, concurrency and rate limit expressions
// alike.
func TestNewChecksExpressionsAgainstTheInputType(t *testing.T) {
	const fields = "fields: id, customer, items, count, labels"
	cases := []struct {
		name  string
		opts  task.Options
		field string
		want  string
	}{
		{"idempotency", task.Options{Idempotency: task.TTL("input.nope", time.Minute)},
			"expression", `1:6: input.nope: no field "nope" on Order; ` + fields},
		{"nested", task.Options{Idempotency: task.TTL(`"o:" + input.items[0].skew`, time.Minute)},
			"expression", `1:22: no field "skew" on Item; fields: sku`},
		{"wrong type", task.Options{Idempotency: task.Status(`input.count + "x"`, time.Minute)},
			"expression", `1:13: found no matching overload for '_+_' applied to '(double, string)'`},
		{"concurrency", task.Options{Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}}},
			"concurrency[0].expression", `input.tenant: no field "tenant" on Order; ` + fields},
		{"rate limit", task.Options{RateLimits: []task.RateLimit{{Name: "l", Limit: 1, Period: time.Second, Key: `input.labels.region + input.custmer`}}},
			"rate_limits[0].key", `input.custmer: no field "custmer" on Order; ` + fields},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := task.New[Order, struct{}]("typed", tc.opts)
			var ce *task.ConfigError
			var cmp *idempotency.Error
			if !errors.As(err, &ce) || ce.Field != tc.field || !errors.As(err, &cmp) || !errors.Is(err, task.ErrInvalidConfig) {
				t.Fatalf("New = %v, want a %s *ConfigError wrapping an ErrCompile *idempotency.Error", err, tc.field)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v\nwant it to contain %s", err, tc.want)
			}
		})
	}
	// The same expressions over the fields that exist are accepted, and
	// derive the keys they derive on any input.
	tk, err := task.New[Order, struct{}]("typed", task.Options{
		Idempotency: task.TTL(`"o:" + input.id + ":" + input.items[0].sku + ":" + string(input.count)`, time.Minute),
		Concurrency: []task.Concurrency{{Expression: "input.customer", MaxRuns: 1}},
		RateLimits:  []task.RateLimit{{Name: "l", Limit: 1, Period: time.Second, Key: `input.labels.region`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(Order{ID: "1", Customer: "acme", Items: []Item{{SKU: "s"}}, Count: 2, Labels: map[string]string{"region": "eu"}})
	d := tk.Definition()
	key, kerr := d.Key(in, nil)
	groups, gerr := taskdef.ConcurrencyGroups(d, in, nil)
	limits, lerr := taskdef.RateLimitKeys(d, in, nil)
	if key != "o:1:s:2" || len(groups) != 1 || groups[0] != "acme" || len(limits) != 1 || limits[0] != "eu" || kerr != nil || gerr != nil || lerr != nil {
		t.Errorf("key %q %v, groups %q %v, limits %q %v", key, kerr, groups, gerr, limits, lerr)
	}
}

// A typed task's numbers are doubles, and its expressions compare them
// with int literals as they evaluate: by value. Arithmetic across the two
// types fails at every trigger, so it fails New.
func TestNewAcceptsNumericComparisonsAsTheyEvaluate(t *testing.T) {
	tk, err := task.New[Order, struct{}]("typed", task.Options{
		Idempotency: task.TTL(`(input.count > 2 ? "big:" : "small:") + input.id`, time.Minute),
		Concurrency: []task.Concurrency{{Expression: `input.count == 3 ? "three" : "other"`, MaxRuns: 1}},
		RateLimits:  []task.RateLimit{{Name: "l", Limit: 1, Period: time.Second, Key: `input.count in [1, 2] ? "few" : "many"`}},
	})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(Order{ID: "1", Count: 3})
	d := tk.Definition()
	key, kerr := d.Key(in, nil)
	groups, gerr := taskdef.ConcurrencyGroups(d, in, nil)
	limits, lerr := taskdef.RateLimitKeys(d, in, nil)
	if key != "big:1" || len(groups) != 1 || groups[0] != "three" || len(limits) != 1 || limits[0] != "many" || kerr != nil || gerr != nil || lerr != nil {
		t.Errorf("key %q %v, groups %q %v, limits %q %v", key, kerr, groups, gerr, limits, lerr)
	}

	_, err = task.New[Order, struct{}]("typed", task.Options{Idempotency: task.TTL(`input.id + string(input.count + 1)`, time.Minute)})
	var cmp *idempotency.Error
	if !errors.As(err, &cmp) || !strings.Contains(err.Error(), `found no matching overload for '_+_' applied to '(double, int)'`) {
		t.Errorf("New with input.count + 1 = %v, want an ErrCompile *idempotency.Error", err)
	}
}

// Inputs without a fixed shape, and definitions without a Go type, keep
// input dynamic; metadata is always dynamic.
func TestDynamicInputsAcceptAnyField(t *testing.T) {
	opts := task.Options{
		Idempotency: task.TTL(`input.anything + additional_metadata.tenant`, time.Minute),
		Concurrency: []task.Concurrency{{Expression: "input.a.b", MaxRuns: 1}},
	}
	if _, err := task.New[map[string]any, struct{}]("m", opts); err != nil {
		t.Error(err)
	}
	if _, err := task.New[json.RawMessage, struct{}]("r", opts); err != nil {
		t.Error(err)
	}
	if _, err := task.New[any, struct{}]("a", opts); err != nil {
		t.Error(err)
	}
	if _, err := task.NewDefinition("d", opts); err != nil {
		t.Error(err)
	}
	meta := task.Options{Idempotency: task.TTL(`input.id + additional_metadata.whatever`, time.Minute)}
	if _, err := task.New[Order, struct{}]("o", meta); err != nil {
		t.Error(err)
	}
}
