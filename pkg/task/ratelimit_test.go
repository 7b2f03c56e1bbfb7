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

// Dynamic units and limits: a bad expression, or one set beside its
// number, fails the definition naming the field; on a run's input they
// give the units and the limit, and a failure or a value out of range is a
// *KeyError naming the limit, the expression and the value.
func TestRateLimitUnitsAndLimitExpressions(t *testing.T) {
	ok := task.RateLimit{Name: "exports", Period: time.Second, UnitsExpression: "input.rows", LimitExpression: "input.quota"}
	with := func(f func(l *task.RateLimit)) []task.RateLimit {
		l := ok
		f(&l)
		return []task.RateLimit{l}
	}
	for _, c := range []struct {
		name   string
		limits []task.RateLimit
		field  string
	}{
		{"units expression does not compile", with(func(l *task.RateLimit) { l.UnitsExpression = "input.(" }), "rate_limits[0].units_expression"},
		{"limit expression does not compile", with(func(l *task.RateLimit) { l.LimitExpression = "1 +" }), "rate_limits[0].limit_expression"},
		{"units and their expression", with(func(l *task.RateLimit) { l.Units = 2 }), "rate_limits[0].units"},
		{"limit and its expression", with(func(l *task.RateLimit) { l.Limit = 5 }), "rate_limits[0].limit"},
		{"static units over the most with a dynamic limit", with(func(l *task.RateLimit) { l.UnitsExpression, l.Units = "", task.RateLimitMax+1 }), "rate_limits[0].units"},
	} {
		_, err := task.NewDefinition("export", task.Options{RateLimits: c.limits})
		var ce *task.ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: %v; want a *ConfigError on %s", c.name, err, c.field)
		}
	}
	type Export struct {
		Rows int `json:"rows"`
	}
	_, err := task.New[Export, struct{}]("export", task.Options{RateLimits: []task.RateLimit{{Name: "exports", Period: time.Second, Limit: 5, UnitsExpression: "input.row"}}})
	if !errors.Is(err, idempotency.ErrCompile) || !strings.Contains(err.Error(), `"input.row"`) || !strings.Contains(err.Error(), "units_expression") {
		t.Errorf("a field the input type lacks: %v; want a compile error naming the expression as written", err)
	}

	d, err := task.NewDefinition("export", task.Options{RateLimits: []task.RateLimit{
		ok,
		{Name: "fixed", Limit: 5, Period: time.Second, UnitsExpression: `input.rows > 2 ? 3 : 1`},
		{Name: "plain", Limit: 7, Period: time.Second},
	}})
	if err != nil {
		t.Fatal(err)
	}
	units, limits, err := taskdef.RateLimitUnits(d, []byte(`{"rows": 3, "quota": 5}`), nil)
	if err != nil || len(units) != 3 || units[0] != 3 || limits[0] != 5 || units[1] != 3 || limits[1] != 5 || units[2] != 1 || limits[2] != 7 {
		t.Fatalf("units %v, limits %v, %v; want [3 3 1], [5 5 7]", units, limits, err)
	}
	only, _ := task.NewDefinition("export", task.Options{RateLimits: []task.RateLimit{ok}})
	if units, limits, err := taskdef.RateLimitUnits(only, []byte(`{"rows": "2", "quota": 4.0}`), nil); err != nil || units[0] != 2 || limits[0] != 4 {
		t.Fatalf("a string and a whole double: units %v, limits %v, %v", units, limits, err)
	}
	spec := taskdef.Spec(d)
	if back, err := taskdef.Definition(spec, nil); err != nil || back.RateLimits[0] != d.RateLimits[0] || taskdef.Hash(taskdef.Spec(back)) != taskdef.Hash(spec) {
		t.Fatalf("from spec: %+v, %v", back, err)
	}

	for _, c := range []struct {
		input, kind, expr, want string
		outOfRange              bool
	}{
		{`{"rows": 6, "quota": 5}`, task.KeyRateLimitUnits, "input.rows", "6 is outside [1, limit 5]", true},
		{`{"rows": 0, "quota": 5}`, task.KeyRateLimitUnits, "input.rows", "0 is outside [1, limit 5]", true},
		{`{"rows": 1.5, "quota": 5}`, task.KeyRateLimitUnits, "input.rows", `"1.5" is not a whole number`, true},
		{`{"rows": 1, "quota": 100001}`, task.KeyRateLimitLimit, "input.quota", "100001 is outside [1, 100000]", true},
		{`{"rows": 1, "quota": -2}`, task.KeyRateLimitLimit, "input.quota", "-2 is outside [1, 100000]", true},
		{`{"rows": 1}`, task.KeyRateLimitLimit, "input.quota", `"input.quota"`, false},
		{`{"quota": 3}`, task.KeyRateLimitUnits, "input.rows", `"input.rows"`, false},
	} {
		_, _, err := taskdef.RateLimitUnits(d, []byte(c.input), nil)
		var ke *task.KeyError
		if !errors.As(err, &ke) || ke.Kind != c.kind || ke.Limit != "exports" || ke.Expression != c.expr ||
			errors.Is(err, task.ErrRateLimitValue) != c.outOfRange || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), `rate limit "exports"`) {
			t.Errorf("%s: %v; want a *KeyError of kind %s on %s saying %s", c.input, err, c.kind, c.expr, c.want)
		}
		var ie *idempotency.Error
		if !c.outOfRange && (!errors.As(err, &ie) || ie.Expr != c.expr) {
			t.Errorf("%s: %v; want the *idempotency.Error of the expression as written", c.input, err)
		}
	}
	// A static units over a dynamic limit's value.
	d2, err := task.NewDefinition("export", task.Options{RateLimits: []task.RateLimit{{Name: "exports", Period: time.Second, Units: 4, LimitExpression: "input.quota"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := taskdef.RateLimitUnits(d2, []byte(`{"quota": 3}`), nil); !errors.Is(err, task.ErrRateLimitValue) || !strings.Contains(err.Error(), "limit 3 is below the 4 units") {
		t.Errorf("a limit below the static units: %v", err)
	}
}
