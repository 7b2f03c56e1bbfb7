package enginetest

import (
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var scheduleCases = []suiteCase{
	{"SaveCreatesAndReplaces", saveSchedule},
	{"AdvanceNeverGoesBack", advanceSchedule},
	{"PauseAndResume", pauseSchedule},
}

func (h *h) schedule(name string) *engine.ScheduleRecord {
	h.Helper()
	r, err := h.e.GetSchedule(h.ctx, name)
	if err != nil {
		h.Fatalf("get schedule %s: %v", name, err)
	}
	return r
}

// Creating a schedule sets its cursor to the registration; create leaves
// an existing one alone, replace writes the new definition and keeps the
// cursor and the paused state.
func saveSchedule(h *h) {
	now := h.now
	written, prev, err := h.e.SaveSchedule(h.ctx, "s", []byte(`{"v":1}`), false, true, now)
	if err != nil || !written || prev != nil {
		h.Fatalf("create = %v, %q, %v", written, prev, err)
	}
	if r := h.schedule("s"); r == nil || r.Name != "s" || string(r.Definition) != `{"v":1}` || !r.Paused || !r.Cursor.Equal(now) || !r.Created.Equal(now) {
		h.Fatalf("record = %+v", r)
	}
	written, prev, err = h.e.SaveSchedule(h.ctx, "s", []byte(`{"v":2}`), false, false, now.Add(time.Second))
	if err != nil || written || string(prev) != `{"v":1}` || string(h.schedule("s").Definition) != `{"v":1}` {
		h.Fatalf("create over an existing schedule = %v, %q, %v", written, prev, err)
	}
	if _, ok, err := h.e.AdvanceSchedule(h.ctx, "s", now.Add(time.Minute)); err != nil || !ok {
		h.Fatalf("advance = %v, %v", ok, err)
	}
	written, prev, err = h.e.SaveSchedule(h.ctx, "s", []byte(`{"v":3}`), true, false, now.Add(2*time.Minute))
	r := h.schedule("s")
	if err != nil || !written || string(prev) != `{"v":1}` || string(r.Definition) != `{"v":3}` || !r.Paused ||
		!r.Cursor.Equal(now.Add(time.Minute)) || !r.Created.Equal(now) || !r.Updated.Equal(now.Add(2*time.Minute)) {
		h.Fatalf("after replace: %v, %q, %v, %+v", written, prev, err, r)
	}
	if _, _, err := h.e.SaveSchedule(h.ctx, "a", []byte(`{}`), false, false, now); err != nil {
		h.Fatal(err)
	}
	all, err := h.e.ListSchedules(h.ctx)
	if err != nil || len(all) != 2 || all[0].Name != "a" || all[1].Name != "s" {
		h.Fatalf("list = %+v, %v; want a and s by name", all, err)
	}
	if r := h.schedule("none"); r != nil {
		h.Fatalf("a schedule never saved = %+v", r)
	}
}

// The cursor only moves forward; ok is false for a schedule that is gone,
// and a late advance does not bring a deleted schedule back.
func advanceSchedule(h *h) {
	base := h.now
	if _, _, err := h.e.SaveSchedule(h.ctx, "s", []byte(`{}`), false, false, base); err != nil {
		h.Fatal(err)
	}
	c, ok, err := h.e.AdvanceSchedule(h.ctx, "s", base.Add(2*time.Second))
	if err != nil || !ok || !c.Equal(base.Add(2*time.Second)) {
		h.Fatalf("advance = %v, %v, %v", c, ok, err)
	}
	// An older tick (a scheduler that lagged) moves nothing: the cursor
	// it is answered with is past its tick.
	c, ok, err = h.e.AdvanceSchedule(h.ctx, "s", base.Add(time.Second))
	if err != nil || !ok || !c.Equal(base.Add(2*time.Second)) || !h.schedule("s").Cursor.Equal(base.Add(2*time.Second)) {
		h.Fatalf("an older tick = %v, %v, %v; want the cursor kept", c, ok, err)
	}
	if ok, err := h.e.DeleteSchedule(h.ctx, "s"); err != nil || !ok {
		h.Fatalf("delete = %v, %v", ok, err)
	}
	if _, ok, err := h.e.AdvanceSchedule(h.ctx, "s", base.Add(time.Hour)); err != nil || ok {
		h.Fatalf("advance after delete = %v, %v", ok, err)
	}
	if r := h.schedule("s"); r != nil {
		h.Fatalf("a late advance brought the deleted schedule back: %+v", r)
	}
	if ok, err := h.e.DeleteSchedule(h.ctx, "s"); err != nil || ok {
		h.Fatalf("second delete = %v, %v", ok, err)
	}
	if all, err := h.e.ListSchedules(h.ctx); err != nil || len(all) != 0 {
		h.Fatalf("list after delete = %+v, %v", all, err)
	}
}

// Pausing keeps the cursor; resuming moves it to the resume time, so the
// ticks of the pause do not fire, and never moves it back.
func pauseSchedule(h *h) {
	base := h.now
	if _, _, err := h.e.SaveSchedule(h.ctx, "s", []byte(`{}`), false, false, base); err != nil {
		h.Fatal(err)
	}
	if ok, err := h.e.SetSchedulePaused(h.ctx, "s", true, base.Add(time.Minute)); err != nil || !ok {
		h.Fatalf("pause = %v, %v", ok, err)
	}
	if r := h.schedule("s"); !r.Paused || !r.Cursor.Equal(base) {
		h.Fatalf("paused record = %+v", r)
	}
	if ok, err := h.e.SetSchedulePaused(h.ctx, "s", false, base.Add(time.Hour)); err != nil || !ok {
		h.Fatalf("resume = %v, %v", ok, err)
	}
	if r := h.schedule("s"); r.Paused || !r.Cursor.Equal(base.Add(time.Hour)) {
		h.Fatalf("resumed record = %+v", r)
	}
	if _, _, err := h.e.AdvanceSchedule(h.ctx, "s", base.Add(2*time.Hour)); err != nil {
		h.Fatal(err)
	}
	if _, err := h.e.SetSchedulePaused(h.ctx, "s", false, base.Add(time.Hour)); err != nil {
		h.Fatal(err)
	}
	if r := h.schedule("s"); !r.Cursor.Equal(base.Add(2 * time.Hour)) {
		h.Fatalf("resume moved the cursor back: %+v", r)
	}
	if ok, err := h.e.SetSchedulePaused(h.ctx, "missing", true, base); err != nil || ok {
		h.Fatalf("pause of no schedule = %v, %v", ok, err)
	}
	if r := h.schedule("missing"); r != nil {
		h.Fatalf("pausing no schedule made one: %+v", r)
	}
}
