package wire

import (
	"encoding/json"
	"time"

	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Schedule is a cron schedule and its state: the body of GET
// /api/v1/schedules/{name}, an item of the list, and taskq schedules ls
// -o json. As a request body (PUT /api/v1/schedules/{name}, POST
// /api/v1/schedules) only the definition's fields are read.
type Schedule struct {
	Name               string          `json:"name"`
	Task               string          `json:"task"`
	Cron               string          `json:"cron"`
	TimeZone           string          `json:"timezone,omitempty"`
	Seconds            bool            `json:"seconds,omitempty"`
	Input              json.RawMessage `json:"input,omitempty"`
	AdditionalMetadata json.RawMessage `json:"additionalMetadata,omitempty"`
	KeyExpression      string          `json:"keyExpression,omitempty"`
	Misfire            ScheduleMisfire `json:"misfire"`
	Paused             bool            `json:"paused"`
	// Set in answers: the latest tick fired (or when the schedule was
	// registered or resumed, if later), the next tick after it and now,
	// and when the schedule was registered and last written.
	CursorAt  *time.Time `json:"cursorAt,omitempty"`
	NextAt    *time.Time `json:"nextAt,omitempty"`
	CreatedAt *time.Time `json:"createdAt,omitempty"`
	UpdatedAt *time.Time `json:"updatedAt,omitempty"`
	// KeyTTLMs is how long each tick's key is held.
	KeyTTLMs int64 `json:"keyTtlMs,omitempty"`
}

// ScheduleMisfire is a schedule's misfire policy: skip (only the latest
// due tick fires) or catch_up (at most Max of the missed ticks), for
// ticks at most HorizonMs old.
type ScheduleMisfire struct {
	Policy    string `json:"policy"`
	Max       int    `json:"max,omitempty"`
	HorizonMs int64  `json:"horizonMs,omitempty"`
}

// ScheduleList is the body of GET /api/v1/schedules and of taskq
// schedules ls -o json.
type ScheduleList struct {
	Schedules []Schedule `json:"schedules"`
}

// ScheduleOf is info's body.
func ScheduleOf(info *client.ScheduleInfo) Schedule {
	s := info.Schedule
	out := Schedule{
		Name: s.Name, Task: s.Task, Cron: s.Cron, TimeZone: s.TimeZone, Seconds: s.Seconds,
		Input: s.Input, AdditionalMetadata: s.Metadata, KeyExpression: s.KeyExpression,
		Misfire: ScheduleMisfire{Policy: string(s.Misfire.Policy), Max: s.Misfire.Max,
			HorizonMs: ticks.Horizon(info.Schedule).Milliseconds()},
		Paused: info.Paused, CursorAt: utcPtr(info.Cursor), NextAt: utcPtr(info.Next),
		CreatedAt: utcPtr(info.Created), UpdatedAt: utcPtr(info.Updated),
		KeyTTLMs: ticks.KeyTTL(info.Schedule).Milliseconds(),
	}
	if out.Misfire.Policy == "" {
		out.Misfire.Policy = string(task.MisfireSkip)
	}
	return out
}

// Definition is the schedule a request body describes; Compile checks it.
func (s Schedule) Definition() task.Schedule {
	return task.Schedule{
		Name: s.Name, Task: s.Task, Cron: s.Cron, TimeZone: s.TimeZone, Seconds: s.Seconds,
		Input: s.Input, Metadata: s.AdditionalMetadata, KeyExpression: s.KeyExpression,
		Misfire: task.Misfire{Policy: task.MisfirePolicy(s.Misfire.Policy), Max: s.Misfire.Max,
			Horizon: time.Duration(s.Misfire.HorizonMs) * time.Millisecond},
		Paused: s.Paused,
	}
}

func utcPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
