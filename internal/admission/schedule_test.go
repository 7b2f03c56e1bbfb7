package admission_test

import (
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/admission"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// A schedule becomes the run's delay, and a ttl or fallback ttl is
// lengthened by it, so that the key counts from the due time; a time
// passed is now.
func TestScheduleSetsTheDelayAndHoldsTheKeyFromTheDueTime(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ttl := task.Must[in, struct{}]("ttl", task.Options{Idempotency: task.TTL(`"t:" + input.id`, time.Minute)})
	hour, past := time.Hour, now.Add(-time.Minute)
	at := now.Add(2 * time.Hour)
	for _, c := range []struct {
		name      string
		def       *task.Definition
		s         *admission.Schedule
		delay     time.Duration
		hold      time.Duration
		strategy  engine.Strategy
		unchanged bool
	}{
		{"ttl in", ttl.Definition(), &admission.Schedule{In: &hour}, time.Hour, time.Hour + time.Minute, task.StrategyTTL, false},
		{"status at", keyed.Definition(), &admission.Schedule{At: &at}, 2 * time.Hour, 3 * time.Hour, task.StrategyStatus, false},
		{"no key", unkeyed.Definition(), &admission.Schedule{In: &hour}, time.Hour, 0, engine.StrategyNone, false},
		{"past", ttl.Definition(), &admission.Schedule{At: &past}, 0, time.Minute, task.StrategyTTL, true},
		{"none", ttl.Definition(), nil, 0, time.Minute, task.StrategyTTL, true},
	} {
		p, err := cfg.Admit(admission.Trigger{Def: c.def, Input: []byte(`{"id":"a"}`), Now: now, Schedule: c.s})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if p.Delay != c.delay || p.Hold != c.hold || p.Strategy != c.strategy {
			t.Errorf("%s: delay %v, hold %v, strategy %s; want %v, %v, %s", c.name, p.Delay, p.Hold, p.Strategy, c.delay, c.hold, c.strategy)
		}
	}
}

// A schedule that cannot be met is a *task.ConfigError naming its field,
// before the key is derived.
func TestScheduleErrorsNameTheField(t *testing.T) {
	now := time.Now()
	neg, far := -time.Second, admission.MaxScheduleAheadDefault+time.Hour
	zero, soon := time.Time{}, now.Add(time.Minute)
	deb := task.Must[in, struct{}]("deb", task.Options{Idempotency: task.Debounce(`"d:" + input.id`, time.Minute)})
	for _, c := range []struct {
		name  string
		def   *task.Definition
		s     *admission.Schedule
		field string
	}{
		{"negative", keyed.Definition(), &admission.Schedule{In: &neg}, admission.FieldRunIn},
		{"too far", keyed.Definition(), &admission.Schedule{In: &far}, admission.FieldRunIn},
		{"zero", keyed.Definition(), &admission.Schedule{At: &zero}, admission.FieldRunAt},
		{"both", keyed.Definition(), &admission.Schedule{At: &soon, In: &neg}, admission.FieldRunAt},
		{"debounce", deb.Definition(), &admission.Schedule{At: &soon}, admission.FieldRunAt},
	} {
		// An input the key expression cannot read: the schedule is
		// checked first.
		_, err := cfg.Admit(admission.Trigger{Def: c.def, Input: []byte(`{}`), Now: now, Schedule: c.s})
		se, ok := admission.ScheduleField(err)
		if !ok || se.Field != c.field || !errors.Is(err, task.ErrInvalidConfig) {
			t.Errorf("%s: %v; want a *task.ConfigError on %s", c.name, err, c.field)
		}
	}
}
