package task_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/pkg/task"
)

// Bad schedules fail with a *ConfigError naming the schedule and the
// field, matching ErrInvalidSchedule.
func TestScheduleErrorsNameTheField(t *testing.T) {
	cases := []struct {
		s     task.Schedule
		field string
	}{
		{task.Schedule{Name: "bad name!", Task: "t", Cron: "* * * * *"}, "name"},
		{task.Schedule{Name: "s", Task: "", Cron: "* * * * *"}, "task"},
		{task.Schedule{Name: "s", Task: "t", Cron: ""}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "61 * * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@fortnightly"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@every 500ms"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "@every soon"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "0 0 30 2 *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * * *"}, "cron"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", TimeZone: "Mars/Olympus"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "CRON_TZ=Nowhere * * * * *"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "CRON_TZ=Europe/Paris * * * * *", TimeZone: "UTC"}, "timezone"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Input: []byte(`[1]`)}, "input"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Metadata: []byte(`{`)}, "additional_metadata"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `schedule.name +`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `schedule.nmae`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", KeyExpression: `1`}, "key_expression"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: "retry"}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Max: 3}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp}}, "misfire"},
		{task.Schedule{Name: "s", Task: "t", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 1, Horizon: time.Millisecond}}, "misfire"},
	}
	for _, c := range cases {
		err := c.s.Validate()
		var se *task.ConfigError
		if !errors.As(err, &se) || !errors.Is(err, task.ErrInvalidSchedule) || errors.Is(err, task.ErrInvalidConfig) ||
			!strings.HasPrefix(err.Error(), fmt.Sprintf("schedule %q: %s: ", c.s.Name, c.field)) {
			t.Fatalf("%+v: err = %v, want a schedule's *ConfigError", c.s, err)
		}
		if se.Field != c.field || se.Schedule != c.s.Name {
			t.Fatalf("%+v: error names schedule %q field %q (%v), want %q %q", c.s, se.Schedule, se.Field, err, c.s.Name, c.field)
		}
	}
}
