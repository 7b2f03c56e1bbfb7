package worker

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// manualClock is a Clock the test moves.
type manualClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

var cronTask = task.Must[json.RawMessage, json.RawMessage]("cron-tick", task.Options{})

// cronRig is a namespace with cronTask registered, a clock the test moves
// and schedulers that pass only when the test says so.
type cronRig struct {
	t     *testing.T
	b     *redistest.Backend
	clock *manualClock
	c     *client.Client
}

func newCronRig(t *testing.T, b *redistest.Backend, start time.Time) *cronRig {
	t.Helper()
	r := &cronRig{t: t, b: b, clock: &manualClock{now: start}}
	r.c = r.client()
	spec := taskdef.Spec(cronTask.Definition())
	raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: start})
	if _, err := clientlink.Store(r.c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *cronRig) client() *client.Client {
	r.t.Helper()
	c, err := client.New(client.Options{Redis: r.b.Client, Namespace: r.b.Namespace, Clock: r.clock, Logger: discard})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	return c
}

// scheduler returns a scheduler with a client of its own, not started:
// the test calls its pass.
func (r *cronRig) scheduler() *scheduler {
	c := r.client()
	return &scheduler{refresh: time.Minute, opTimeout: 5 * time.Second, clock: r.clock, log: discard, c: c, scheds: c.Schedules(), link: clientlink.Of(c)}
}

func (r *cronRig) put(s task.Schedule) {
	r.t.Helper()
	s.Task = cronTask.Name()
	if _, err := r.c.Schedules().Put(context.Background(), s); err != nil {
		r.t.Fatal(err)
	}
}

// runsByKey counts the runs of cronTask by idempotency key.
func (r *cronRig) runsByKey() map[string]int {
	r.t.Helper()
	out := map[string]int{}
	o := client.ListOptions{Task: cronTask.Name(), Limit: client.ListLimitMax}
	for range 100 {
		page, err := r.c.Inspector().ListRuns(context.Background(), o)
		if err != nil {
			r.t.Fatal(err)
		}
		for _, run := range page.Items {
			out[run.IdempotencyKey]++
		}
		if o.Cursor = page.NextCursor; o.Cursor == "" {
			return out
		}
	}
	r.t.Fatal("too many pages of runs")
	return nil
}

func tickKeys(name string, ticks ...time.Time) []string {
	keys := make([]string, len(ticks))
	for i, t := range ticks {
		keys[i] = name + "@" + t.UTC().Format(time.RFC3339)
	}
	return keys
}

// checkFiredOnce fails unless the runs are exactly one per key of want.
func (r *cronRig) checkFiredOnce(want []string) {
	r.t.Helper()
	got := r.runsByKey()
	for _, k := range want {
		if got[k] != 1 {
			r.t.Errorf("tick %s fired %d times, want once", k, got[k])
		}
		delete(got, k)
	}
	if len(got) > 0 {
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.t.Errorf("runs of ticks that should not have fired: %v", keys)
	}
}

// Several schedulers passing at once over the same ticks, as many
// workers do, fire each tick exactly once, the ticks caught up after a
// gap included.
func TestSchedulersRacingFireEachTickOnce(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		start := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
		r := newCronRig(t, b, start)
		r.put(task.Schedule{Name: "every-second", Cron: "@every 1s",
			Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 100, Horizon: time.Hour}})
		scheds := make([]*scheduler, 4)
		for i := range scheds {
			scheds[i] = r.scheduler()
		}
		var want []time.Time
		at := start
		for step := range 15 {
			gap := time.Second
			if step == 7 {
				gap = 5 * time.Second // a gap all four catch up on
			}
			for range int(gap / time.Second) {
				at = at.Add(time.Second)
				want = append(want, at)
			}
			r.clock.set(at.Add(300 * time.Millisecond))
			var wg sync.WaitGroup
			for _, s := range scheds {
				wg.Add(1)
				go func() { defer wg.Done(); s.pass(nil) }()
			}
			wg.Wait()
		}
		r.checkFiredOnce(tickKeys("every-second", want...))
		info, err := r.c.Schedules().Get(context.Background(), "every-second")
		if err != nil || !info.Cursor.Equal(at) {
			t.Fatalf("cursor = %v, %v; want the last tick %v", info.Cursor, err, at)
		}
	})
}

// After a gap with no scheduler, skip fires only the latest tick and
// catch-up the N latest; a tick past the horizon fires under neither.
func TestSchedulerMisfireSkipAndCatchUp(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		start := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
		r := newCronRig(t, b, start)
		r.put(task.Schedule{Name: "skip", Cron: "* * * * *", Misfire: task.Misfire{Horizon: time.Hour}})
		r.put(task.Schedule{Name: "catch", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 3, Horizon: time.Hour}})
		r.put(task.Schedule{Name: "strict", Cron: "* * * * *", Misfire: task.Misfire{Horizon: 10 * time.Second}})
		s := r.scheduler()
		r.clock.set(start.Add(30 * time.Second))
		if wait := s.pass(nil); wait != 30*time.Second {
			t.Fatalf("idle pass waits %s, want 30s, until the next tick", wait)
		}
		r.checkFiredOnce(nil)
		r.clock.set(start.Add(10*time.Minute + 20*time.Second)) // 10 ticks missed
		s.pass(nil)
		m := func(n int) time.Time { return start.Add(time.Duration(n) * time.Minute) }
		want := append(tickKeys("skip", m(10)), tickKeys("catch", m(8), m(9), m(10))...)
		r.checkFiredOnce(want)
		// The next pass goes on from the cursor: one new tick each.
		r.clock.set(start.Add(11*time.Minute + 5*time.Second))
		s.pass(nil)
		want = append(want, tickKeys("skip", m(11))...)
		want = append(want, tickKeys("catch", m(11))...)
		want = append(want, tickKeys("strict", m(11))...)
		r.checkFiredOnce(want)
	})
}

// A paused schedule fires nothing; once resumed, the ticks of the pause
// do not fire; a deleted one fires nothing and is not made again.
func TestSchedulerPauseResumeDelete(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		start := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
		r := newCronRig(t, b, start)
		r.put(task.Schedule{Name: "p", Cron: "* * * * *", Misfire: task.Misfire{Policy: task.MisfireCatchUp, Max: 10, Horizon: time.Hour}})
		s := r.scheduler()
		m := func(n int) time.Time { return start.Add(time.Duration(n) * time.Minute) }
		r.clock.set(m(1).Add(time.Second))
		s.pass(nil)
		want := tickKeys("p", m(1))
		r.checkFiredOnce(want)
		if err := r.c.Schedules().SetPaused(ctx, "p", true); err != nil {
			t.Fatal(err)
		}
		r.clock.set(m(4).Add(time.Second))
		s.pass(nil)
		r.checkFiredOnce(want)
		if err := r.c.Schedules().SetPaused(ctx, "p", false); err != nil {
			t.Fatal(err)
		}
		s.pass(nil)
		r.checkFiredOnce(want) // 10:02 to 10:04 were paused
		r.clock.set(m(5).Add(time.Second))
		s.pass(nil)
		want = append(want, tickKeys("p", m(5))...)
		r.checkFiredOnce(want)
		if err := r.c.Schedules().Delete(ctx, "p"); err != nil {
			t.Fatal(err)
		}
		r.clock.set(m(7).Add(time.Second))
		s.pass(nil)
		r.checkFiredOnce(want)
		if all, _ := r.c.Schedules().List(ctx); len(all) != 0 {
			t.Fatalf("schedules after delete: %+v", all)
		}
	})
}

// A tick whose task no worker has registered fires nothing and is tried
// again at the next refresh; once the task is registered, it fires.
func TestSchedulerWaitsForTheTaskToBeRegistered(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		start := time.Date(2026, 6, 1, 10, 0, 0, 0, time.UTC)
		r := newCronRig(t, b, start)
		if _, err := r.c.Schedules().Put(context.Background(), task.Schedule{Name: "orphan", Task: "cron-later", Cron: "* * * * *"}); err != nil {
			t.Fatal(err)
		}
		s := r.scheduler()
		r.clock.set(start.Add(time.Minute + time.Second))
		if wait := s.pass(nil); wait != s.refresh {
			t.Fatalf("pass with the task unregistered waits %s, want the refresh %s", wait, s.refresh)
		}
		later := task.Must[json.RawMessage, json.RawMessage]("cron-later", task.Options{})
		spec := taskdef.Spec(later.Definition())
		raw, _ := json.Marshal(task.Registered{Spec: spec, Hash: taskdef.Hash(spec), Worker: "test", RegisteredAt: start})
		if _, err := clientlink.Store(r.c).RegisterTask(context.Background(), spec.Name, raw, true); err != nil {
			t.Fatal(err)
		}
		r.clock.set(start.Add(time.Minute + 5*time.Second))
		s.pass(nil)
		page, err := r.c.Inspector().ListRuns(context.Background(), client.ListOptions{Task: "cron-later"})
		if err != nil || len(page.Items) != 1 || page.Items[0].IdempotencyKey != tickKeys("orphan", start.Add(time.Minute))[0] {
			t.Fatalf("runs once the task is registered: %+v, %v", page, err)
		}
	})
}
