package redisstore_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// schedule registers a schedule named name, its cursor at f.now.
func (f *fixture) schedule(name string) {
	f.t.Helper()
	if _, _, err := f.s.SaveSchedule(f.ctx, name, []byte(`{"name":"`+name+`"}`), false, false, f.now); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) getSchedule(name string) *engine.ScheduleRecord {
	f.t.Helper()
	r, err := f.s.GetSchedule(f.ctx, name)
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// Creating a schedule sets its cursor to the registration; create leaves
// an existing schedule alone, replace writes the new definition and keeps
// the cursor and the paused state.
func TestSaveScheduleCreatesAndReplaces(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		now := time.UnixMilli(f.now.UnixMilli())
		written, prev, err := f.s.SaveSchedule(f.ctx, "s", []byte(`{"v":1}`), false, true, now)
		if err != nil || !written || prev != nil {
			t.Fatalf("create = %v, %q, %v", written, prev, err)
		}
		r := f.getSchedule("s")
		if string(r.Definition) != `{"v":1}` || !r.Paused || !r.Cursor.Equal(now) || !r.Created.Equal(now) {
			t.Fatalf("record = %+v", r)
		}
		written, prev, _ = f.s.SaveSchedule(f.ctx, "s", []byte(`{"v":2}`), false, false, now.Add(time.Second))
		if written || string(prev) != `{"v":1}` || string(f.getSchedule("s").Definition) != `{"v":1}` {
			t.Fatalf("create over an existing schedule wrote: %v, %q", written, prev)
		}
		f.s.AdvanceSchedule(f.ctx, "s", now.Add(time.Minute))
		written, prev, _ = f.s.SaveSchedule(f.ctx, "s", []byte(`{"v":3}`), true, false, now.Add(2*time.Minute))
		r = f.getSchedule("s")
		if !written || string(prev) != `{"v":1}` || string(r.Definition) != `{"v":3}` || !r.Paused ||
			!r.Cursor.Equal(now.Add(time.Minute)) || !r.Created.Equal(now) || !r.Updated.Equal(now.Add(2*time.Minute)) {
			t.Fatalf("after replace: %v, %q, %+v", written, prev, r)
		}
		f.schedule("a")
		all, err := f.s.ListSchedules(f.ctx)
		if err != nil || len(all) != 2 || all[0].Name != "a" || all[1].Name != "s" {
			t.Fatalf("list = %+v, %v", all, err)
		}
	})
}

// The cursor only moves forward, and a deleted schedule is not brought
// back by a late advance.
func TestAdvanceScheduleNeverGoesBack(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.schedule("s")
		base := time.UnixMilli(f.now.UnixMilli())
		c, ok, err := f.s.AdvanceSchedule(f.ctx, "s", base.Add(2*time.Second))
		if err != nil || !ok || !c.Equal(base.Add(2*time.Second)) {
			t.Fatalf("advance = %v, %v, %v", c, ok, err)
		}
		c, _, _ = f.s.AdvanceSchedule(f.ctx, "s", base.Add(time.Second))
		if !c.Equal(base.Add(2*time.Second)) || !f.getSchedule("s").Cursor.Equal(base.Add(2*time.Second)) {
			t.Fatalf("an older tick moved the cursor back to %v", c)
		}
		if ok, err := f.s.DeleteSchedule(f.ctx, "s"); !ok || err != nil {
			t.Fatalf("delete = %v, %v", ok, err)
		}
		if _, ok, err := f.s.AdvanceSchedule(f.ctx, "s", base.Add(time.Hour)); ok || err != nil {
			t.Fatalf("advance after delete = %v, %v", ok, err)
		}
		if f.getSchedule("s") != nil || b.Client.Exists(f.ctx, f.k.Schedule("s")).Val() != 0 {
			t.Fatal("a late advance brought the deleted schedule back")
		}
		if ok, _ := f.s.DeleteSchedule(f.ctx, "s"); ok {
			t.Fatal("second delete reported a schedule")
		}
		if all, _ := f.s.ListSchedules(f.ctx); len(all) != 0 {
			t.Fatalf("list after delete = %+v", all)
		}
	})
}

// Pausing keeps the cursor; resuming moves it to the resume time, so the
// ticks of the pause do not fire, and never moves it back.
func TestPauseAndResumeSchedule(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.schedule("s")
		base := time.UnixMilli(f.now.UnixMilli())
		if ok, err := f.s.SetSchedulePaused(f.ctx, "s", true, base.Add(time.Minute)); !ok || err != nil {
			t.Fatalf("pause = %v, %v", ok, err)
		}
		if r := f.getSchedule("s"); !r.Paused || !r.Cursor.Equal(base) {
			t.Fatalf("paused record = %+v", r)
		}
		f.s.SetSchedulePaused(f.ctx, "s", false, base.Add(time.Hour))
		if r := f.getSchedule("s"); r.Paused || !r.Cursor.Equal(base.Add(time.Hour)) {
			t.Fatalf("resumed record = %+v", r)
		}
		f.s.AdvanceSchedule(f.ctx, "s", base.Add(2*time.Hour))
		f.s.SetSchedulePaused(f.ctx, "s", false, base.Add(time.Hour))
		if r := f.getSchedule("s"); !r.Cursor.Equal(base.Add(2 * time.Hour)) {
			t.Fatalf("resume moved the cursor back: %+v", r)
		}
		if ok, err := f.s.SetSchedulePaused(f.ctx, "missing", true, base); ok || err != nil {
			t.Fatalf("pause of no schedule = %v, %v", ok, err)
		}
		if b.Client.Exists(f.ctx, f.k.Schedule("missing")).Val() != 0 {
			t.Fatal("pausing no schedule made a record")
		}
	})
}
