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

// Each bad rate limit is a *ConfigError naming the task and the limit's
// field.
func TestRateLimitValidation(t *testing.T) {
	ok := task.RateLimit{Name: "emails", Limit: 10, Period: time.Second}
	with := func(f func(l *task.RateLimit)) []task.RateLimit {
		l := ok
		f(&l)
		return []task.RateLimit{l}
	}
	cases := []struct {
		name   string
		limits []task.RateLimit
		field  string
	}{
		{"no name", with(func(l *task.RateLimit) { l.Name = "" }), "rate_limits[0].name"},
		{"a colon in the name", with(func(l *task.RateLimit) { l.Name = "a:b" }), "rate_limits[0].name"},
		{"zero limit", with(func(l *task.RateLimit) { l.Limit = 0 }), "rate_limits[0].limit"},
		{"limit over the most", with(func(l *task.RateLimit) { l.Limit = task.RateLimitMax + 1 }), "rate_limits[0].limit"},
		{"no period", with(func(l *task.RateLimit) { l.Period = 0 }), "rate_limits[0].period"},
		{"period too long", with(func(l *task.RateLimit) { l.Period = 31 * 24 * time.Hour }), "rate_limits[0].period"},
		{"period below a microsecond's grain", with(func(l *task.RateLimit) { l.Period = time.Second + 1 }), "rate_limits[0].period"},
		{"negative units", with(func(l *task.RateLimit) { l.Units = -1 }), "rate_limits[0].units"},
		{"units over the limit", with(func(l *task.RateLimit) { l.Units = 11 }), "rate_limits[0].units"},
		{"key does not compile", with(func(l *task.RateLimit) { l.Key = "input.(" }), "rate_limits[0].key"},
		{"one name twice", []task.RateLimit{ok, ok}, "rate_limits[1].name"},
		{"too many", make([]task.RateLimit, task.RateLimitsMax+1), "rate_limits"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := task.NewDefinition("send", task.Options{RateLimits: c.limits})
			var ce *task.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, task.ErrInvalidConfig) || ce.Field != c.field || ce.Task != "send" {
				t.Fatalf("err = %v; want a *ConfigError on %s", err, c.field)
			}
		})
	}
	if _, err := task.NewDefinition("send", task.Options{RateLimits: with(func(l *task.RateLimit) { l.Key = "input.(" })}); !errors.Is(err, idempotency.ErrCompile) {
		t.Errorf("a key that does not compile: %v; want it to wrap the compile error", err)
	}
}

// Units default to 1 in the definition's own copy; a registered spec
// carries the limits and rebuilds them; the keys are evaluated per limit,
// "" for a limit without one, and a failing key names its limit.
func TestRateLimitDefaultsSpecAndKeys(t *testing.T) {
	limits := []task.RateLimit{
		{Name: "global", Limit: 100, Period: time.Minute},
		{Name: "per-tenant", Limit: 5, Period: time.Second, Units: 2, Key: `"t:" + input.tenant`},
	}
	d, err := task.NewDefinition("send", task.Options{RateLimits: limits})
	if err != nil {
		t.Fatal(err)
	}
	if d.RateLimits[0].Units != 1 || limits[0].Units != 0 {
		t.Fatalf("units = %d (caller's %d); want 1 in the definition, the caller's slice untouched", d.RateLimits[0].Units, limits[0].Units)
	}
	b, err := json.Marshal(taskdef.Spec(d))
	if err != nil {
		t.Fatal(err)
	}
	var s task.Spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	back, err := taskdef.Definition(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.RateLimits) != 2 || back.RateLimits[1] != d.RateLimits[1] || back.RateLimits[0] != d.RateLimits[0] {
		t.Fatalf("rebuilt limits %+v, want %+v", back.RateLimits, d.RateLimits)
	}
	if taskdef.Hash(s) == taskdef.Hash(task.Spec{Name: "send"}) {
		t.Fatal("the spec's hash does not see its rate limits")
	}
	keys, err := taskdef.RateLimitKeys(back, []byte(`{"tenant":"acme"}`), nil)
	if err != nil || len(keys) != 2 || keys[0] != "" || keys[1] != "t:acme" {
		t.Fatalf("keys = %q, %v", keys, err)
	}
	_, err = taskdef.RateLimitKeys(back, []byte(`{}`), nil)
	var rk *task.KeyError
	if !errors.As(err, &rk) || rk.Kind != task.KeyRateLimit || rk.Limit != "per-tenant" || rk.Expression != `"t:" + input.tenant` || !errors.Is(err, idempotency.ErrEval) ||
		!strings.HasPrefix(err.Error(), `rate limit "per-tenant" key: `) {
		t.Fatalf("a key on a missing field: %v; want a rate limit *KeyError naming the limit, wrapping the evaluation error", err)
	}
	// A spec without limits keeps the hash it had before there were any.
	plain, _ := task.NewDefinition("send", task.Options{})
	if b, _ := json.Marshal(taskdef.Spec(plain)); strings.Contains(string(b), "rateLimits") {
		t.Fatalf("a spec without limits says %s", b)
	}
}
