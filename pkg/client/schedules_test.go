package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/ticks"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

var cronReport = task.Must[map[string]any, map[string]any]("cron-report", task.Options{})

// Schedules are created once, written again with Put (keeping their
// paused state), paused, resumed and deleted; what is missing or bad says
// so with its error.
func TestSchedulesLifecycle(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		s := c.Schedules()
		sched := task.Schedule{Name: "nightly", Task: "cron-report", Cron: "0 2 * * *", TimeZone: "Europe/Paris",
			Input: []byte(`{"region":"eu"}`)}
		info, err := s.Create(ctx, sched)
		if err != nil {
			t.Fatal(err)
		}
		paris, err := time.LoadLocation(sched.TimeZone)
		if err != nil {
			t.Fatal(err)
		}
		if info.Paused || info.Schedule.KeyExpression != task.ScheduleKeyDefault || info.Next.IsZero() ||
			info.Next.In(paris).Hour() != 2 {
			t.Fatalf("created = %+v", info)
		}
		if _, err := s.Create(ctx, sched); !errors.Is(err, client.ErrScheduleExists) {
			t.Fatalf("second create = %v, want ErrScheduleExists", err)
		}
		var se *task.ConfigError
		if _, err := s.Create(ctx, task.Schedule{Name: "bad", Task: "t", Cron: "0 25 * * *"}); !errors.As(err, &se) || se.Field != "cron" ||
			!errors.Is(err, task.ErrInvalidSchedule) {
			t.Fatalf("bad create = %v, want a schedule *task.ConfigError on cron", err)
		}
		if err := s.SetPaused(ctx, "nightly", true); err != nil {
			t.Fatal(err)
		}
		sched.Cron = "0 3 * * *"
		if info, err = s.Put(ctx, sched); err != nil || !info.Paused || info.Schedule.Cron != "0 3 * * *" {
			t.Fatalf("put over a paused schedule = %+v, %v; want it paused still, with the new cron", info, err)
		}
		if err := s.SetPaused(ctx, "nightly", false); err != nil {
			t.Fatal(err)
		}
		all, err := s.List(ctx)
		if err != nil || len(all) != 1 || all[0].Paused || all[0].Schedule.Name != "nightly" {
			t.Fatalf("list = %+v, %v", all, err)
		}
		if err := s.Delete(ctx, "nightly"); err != nil {
			t.Fatal(err)
		}
		for what, err := range map[string]error{
			"get":    func() error { _, err := s.Get(ctx, "nightly"); return err }(),
			"pause":  s.SetPaused(ctx, "nightly", true),
			"resume": s.SetPaused(ctx, "nightly", false),
			"delete": s.Delete(ctx, "nightly"),
			"now":    func() error { _, err := s.TriggerNow(ctx, "nightly"); return err }(),
		} {
			if !errors.Is(err, client.ErrScheduleNotFound) {
				t.Errorf("%s after delete = %v, want ErrScheduleNotFound", what, err)
			}
		}
	})
}

// Firing a tick twice creates one run: the second meets the tick's key
// (strategy ttl, held KeyTTL), gets a collision naming the first run and
// is recorded as suppressed with source schedule. TriggerNow fires a run
// of its own.
func TestScheduleTickFiresOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		registerDef(t, c, cronReport.Definition())
		s := c.Schedules()
		info, err := s.Create(ctx, task.Schedule{Name: "minutely", Task: "cron-report", Cron: "* * * * *",
			Input: []byte(`{"n":1}`), Metadata: []byte(`{"team":"ops"}`)})
		if err != nil {
			t.Fatal(err)
		}
		tick := info.Next
		cs, err := ticks.Compile(info.Schedule)
		if err != nil {
			t.Fatal(err)
		}
		link := clientlink.Of(c)
		if err := link.FireTick(ctx, cs, tick); err != nil {
			t.Fatal(err)
		}
		wantKey := "minutely@" + tick.UTC().Format(time.RFC3339)
		key, err := c.Inspector().GetKey(ctx, wantKey)
		if err != nil || key.Strategy != string(task.StrategyTTL) || key.TTL <= time.Hour {
			t.Fatalf("key = %+v, %v", key, err)
		}
		h := c.Handle(key.OwnerRunID)
		run, err := c.Inspector().GetRun(ctx, h.ID())
		if err != nil || run.IdempotencyKey != wantKey || run.Task != "cron-report" || string(run.Input) != `{"n":1}` {
			t.Fatalf("run = %+v, %v; want key %q", run, err, wantKey)
		}
		var coll *client.IdempotencyCollisionError
		if err := link.FireTick(ctx, cs, tick); !errors.As(err, &coll) || coll.ExistingRunID != h.ID() {
			t.Fatalf("second fire = %v, want a collision with %s", err, h.ID())
		}
		sup, err := c.Inspector().ListSuppressed(ctx, client.ListOptions{Key: wantKey})
		if err != nil || len(sup.Items) != 1 || sup.Items[0].Source != client.SourceSchedule || sup.Items[0].Owner != h.ID() {
			t.Fatalf("suppressed = %+v, %v", sup, err)
		}
		if err := link.AdvanceSchedule(ctx, "minutely", tick); err != nil {
			t.Fatalf("advance = %v", err)
		}
		now, err := s.TriggerNow(ctx, "minutely")
		if err != nil || now.ID() == h.ID() {
			t.Fatalf("trigger now = %v, %v", now, err)
		}
		if got, _ := s.Get(ctx, "minutely"); !got.Cursor.Equal(tick) {
			t.Fatalf("trigger now moved the cursor to %v", got.Cursor)
		}
		if _, err := s.Create(ctx, task.Schedule{Name: "orphan", Task: "no-such-task", Cron: "* * * * *"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.TriggerNow(ctx, "orphan"); !errors.Is(err, client.ErrTaskNotFound) {
			t.Fatalf("firing a task nobody registered = %v, want ErrTaskNotFound", err)
		}
	})
}
