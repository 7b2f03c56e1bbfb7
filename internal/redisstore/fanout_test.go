package redisstore_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// inSteps returns a store of f's namespace whose fan-outs go in steps, one
// trigger per call, with after as its hook.
func (f *fixture) inSteps(after func(step engine.FanoutStep, eventID string, triggered int) error) *redisstore.Store {
	s := redisstore.New(f.b.Client, f.b.Namespace)
	s.SetFanoutHooks(&engine.FanoutHooks{Steps: true, TriggersPerCall: 1, After: after})
	return s
}

// stopAt is a hook that stops the fan-out at step, once triggered tasks
// have been triggered.
func stopAt(step engine.FanoutStep, triggered int) func(engine.FanoutStep, string, int) error {
	return func(s engine.FanoutStep, _ string, n int) error {
		if s == step && n == triggered {
			return errors.New("the ingester stopped here")
		}
		return nil
	}
}

// fanoutScenario is an event with one task of each kind: a run created, a
// collision with a run triggered before, a collision with another task of
// the same event, a run without a key, and a task whose key could not be
// derived. want is what the event records for them.
type fanoutScenario struct {
	p     *engine.PushEventParams
	held  *engine.EnqueueParams
	want  []engine.EventRun
	tasks int // tasks that get a trigger
}

func (f *fixture) fanoutScenario(id string) fanoutScenario {
	held := f.params("other", "k-held-"+id, engine.StrategyTTL)
	f.enqueue(held)
	a := f.eventRun("a", "k-a-"+id, engine.StrategyStatus)
	b := f.eventRun("b", "k-held-"+id, engine.StrategyTTL)
	c := f.eventRun("c", "k-a-"+id, engine.StrategyTTL)
	d := f.eventRun("d", "", engine.StrategyNone)
	e := engine.EventTask{Task: "e", Error: "evaluating input.missing: no such key"}
	return fanoutScenario{
		p: f.event(id, "order.paid", a, b, c, d, e), held: held, tasks: 4,
		want: []engine.EventRun{
			{Task: "a", Outcome: "created", RunID: a.Run.RunID, IdempotencyKey: a.Run.Key},
			{Task: "b", Outcome: "deduplicated", RunID: held.RunID, IdempotencyKey: b.Run.Key},
			{Task: "c", Outcome: "deduplicated", RunID: a.Run.RunID, IdempotencyKey: c.Run.Key},
			{Task: "d", Outcome: "created", RunID: d.Run.RunID},
			{Task: "e", Outcome: "error", Error: e.Error},
		},
	}
}

// contents describes every key of the namespace with its value, on
// miniredis as on Redis, so that two descriptions differ if anything was
// written in between.
func (f *fixture) contents() string {
	f.t.Helper()
	c := f.b.Client
	keys, err := redistest.Keys(f.ctx, c, "taskq:{"+f.b.Namespace+"}:*")
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, k := range keys {
		var v any
		switch typ := c.Type(f.ctx, k).Val(); typ {
		case "string":
			v = c.Get(f.ctx, k).Val()
		case "hash":
			v = c.HGetAll(f.ctx, k).Val()
		case "zset":
			v = c.ZRangeWithScores(f.ctx, k, 0, -1).Val()
		case "stream":
			v = c.XRange(f.ctx, k, "-", "+").Val()
		default:
			v = typ
		}
		fmt.Fprintf(&out, "%s=%v ttl=%v\n", k, v, c.PTTL(f.ctx, k).Val() > 0)
	}
	return out.String()
}

// runsByTask counts the runs of the namespace per task.
func (f *fixture) runsByTask() map[string]int {
	f.t.Helper()
	ids, err := f.s.ListRunIDs(f.ctx, 0, 1000)
	if err != nil {
		f.t.Fatal(err)
	}
	out := map[string]int{}
	for _, id := range ids {
		out[f.b.Client.HGet(f.ctx, f.k.Run(id), "task").Val()]++
	}
	return out
}

// check asserts that the event records want and that every task has at
// most the one run the scenario gives it: none was created twice.
func (sc fanoutScenario) check(t *testing.T, f *fixture) {
	t.Helper()
	ev, err := f.s.GetEvent(f.ctx, sc.p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ev.Runs) != fmt.Sprint(sc.want) {
		t.Fatalf("event records\n %+v\nwant\n %+v", ev.Runs, sc.want)
	}
	if got := fmt.Sprint(f.runsByTask()); got != "map[a:1 d:1 other:1]" {
		t.Fatalf("runs by task = %s, want one of a, d and the run held before", got)
	}
	if f.b.Client.ZScore(f.ctx, f.k.Fanouts(), sc.p.ID).Err() == nil {
		t.Fatal("the fan-out is still pending")
	}
}

// Step 1 stores the event as the fan-out at once does, with what each
// task's trigger needs instead of the outcomes, and enters it in the
// pending fan-outs; an event ID taken is refused with nothing written.
func TestStoreEventKeepsThePendingFanout(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		sc := f.fanoutScenario("ev-1")
		if err := f.s.StoreEventStep(f.ctx, sc.p); err != nil {
			t.Fatal(err)
		}
		h := b.Client.HGetAll(f.ctx, f.k.Event("ev-1")).Val()
		if h["key"] != "order.paid" || h["payload"] != `{"id":"1"}` || h["meta"] != `{"tenant":"a"}` ||
			h["created"] != fmt.Sprint(f.now.UnixMilli()) || h["runs"] != "" {
			t.Fatalf("event record = %v", h)
		}
		var pending struct {
			Keep  int64 `json:"keep"`
			Tasks []struct {
				Task, Prefix, Run, Key, Strat, Error string
			} `json:"tasks"`
		}
		if err := json.Unmarshal([]byte(h["fanout"]), &pending); err != nil {
			t.Fatalf("pending fan-out %q: %v", h["fanout"], err)
		}
		if pending.Keep != time.Hour.Milliseconds() || len(pending.Tasks) != 5 ||
			pending.Tasks[0].Run != sc.p.Tasks[0].Run.RunID || pending.Tasks[0].Prefix != f.k.Prefix() ||
			pending.Tasks[3].Strat != "none" || pending.Tasks[4].Error != sc.want[4].Error || pending.Tasks[4].Prefix != "" {
			t.Fatalf("pending fan-out = %+v", pending)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Event("ev-1")).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("event PTTL = %s", ttl)
		}
		for _, index := range []string{f.k.Events(), f.k.EventKeyIndex("order.paid"), f.k.Fanouts()} {
			if s := b.Client.ZScore(f.ctx, index, "ev-1").Val(); int64(s) != f.now.UnixMilli() {
				t.Errorf("%s: score %v, want the event's time", index, s)
			}
		}
		if ev, err := f.s.GetEvent(f.ctx, "ev-1"); err != nil || len(ev.Runs) != 0 {
			t.Fatalf("pending event = %+v, %v; want it without outcomes", ev, err)
		}
		if n := b.Client.ZCard(f.ctx, f.k.Runs()).Val(); n != 1 {
			t.Fatalf("%d runs, want only the one held before: step 1 triggers nothing", n)
		}
		before := f.snapshot()
		if err := f.s.StoreEventStep(f.ctx, sc.p); !errors.Is(err, engine.ErrEventExists) {
			t.Fatalf("the same ID again: %v", err)
		}
		if after := f.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("a refused store wrote:\n before %v\n after  %v", before, after)
		}
	})
}

// A trigger whose marker exists answers what the marker says and writes
// nothing: a replay creates no run, even once the key it collided with is
// free again, and the markers are kept for the event's retention.
func TestTriggerEventAnswersAReplayWithTheFirstOutcome(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		sc := f.fanoutScenario("ev-1")
		first, err := f.s.TriggerEventStep(f.ctx, sc.p)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(first[:4]) != fmt.Sprint(sc.want[:4]) {
			t.Fatalf("first triggers =\n %+v\nwant\n %+v", first[:4], sc.want[:4])
		}
		if v := b.Client.Get(f.ctx, f.k.EventTrigger("ev-1", "a")).Val(); v != "created "+sc.want[0].RunID {
			t.Fatalf("marker of a = %q", v)
		}
		if v := b.Client.Get(f.ctx, f.k.EventTrigger("ev-1", "b")).Val(); v != "deduplicated "+sc.held.RunID {
			t.Fatalf("marker of b = %q", v)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.EventTrigger("ev-1", "d")).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("marker PTTL = %s, want the event's retention", ttl)
		}
		// The key b collided with is freed, and a's run too: without its
		// marker, a replay would create runs for both.
		b.Client.Del(f.ctx, f.k.IdempotencyKey(sc.held.Key), f.k.IdempotencyKey(sc.p.Tasks[0].Run.Key))
		before := f.contents()
		again, err := f.s.TriggerEventStep(f.ctx, sc.p)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("replay =\n %+v\nwant the first outcomes\n %+v", again, first)
		}
		if after := f.contents(); after != before {
			t.Fatalf("a replay wrote:\n before %v\n after  %v", before, after)
		}
		if got := fmt.Sprint(f.runsByTask()); got != "map[a:1 d:1 other:1]" {
			t.Fatalf("runs by task = %s", got)
		}
	})
}

// A replayed trigger does not hand its payload to a debounced owner again:
// a newer trigger's payload, handed over in between, stays.
func TestTriggerEventReplayDoesNotDebounceAgain(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		owner := f.params("d", "deb", engine.StrategyDebounce)
		f.enqueue(owner)
		p := f.event("ev-1", "k", f.eventRun("d", "deb", engine.StrategyDebounce))
		p.Payload = []byte(`{"id":"event"}`)
		first, err := f.s.TriggerEventStep(f.ctx, p)
		if err != nil || first[0].Outcome != engine.EventRunDebounced || first[0].RunID != owner.RunID {
			t.Fatalf("first trigger = %+v, %v", first, err)
		}
		newer := f.params("d", "deb", engine.StrategyDebounce)
		newer.Input = []byte(`{"id":"newer"}`)
		newer.Now = f.now.Add(time.Second)
		if r := f.enqueue(newer); r.Outcome != engine.TriggerDebounced {
			t.Fatalf("newer trigger = %+v", r)
		}
		due := b.Client.ZScore(f.ctx, f.k.Retry(), owner.RunID).Val()
		again, err := f.s.TriggerEventStep(f.ctx, p)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("replay = %+v, %v; want %+v", again, err, first)
		}
		if in := b.Client.HGet(f.ctx, f.k.Run(owner.RunID), "input").Val(); in != `{"id":"newer"}` {
			t.Fatalf("owner's input = %s, want the newer trigger's", in)
		}
		if now := b.Client.ZScore(f.ctx, f.k.Retry(), owner.RunID).Val(); now != due {
			t.Fatalf("the replay moved the owner's window from %v to %v", due, now)
		}
	})
}

// Recording the outcomes takes the fan-out out of the pending ones; a
// later recorder is answered with what the first recorded, and a recorder
// that comes after the event expired only drops its pending entry.
func TestRecordEventFirstRecorderWins(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		sc := f.fanoutScenario("ev-1")
		if err := f.s.StoreEventStep(f.ctx, sc.p); err != nil {
			t.Fatal(err)
		}
		got, err := f.s.RecordEventStep(f.ctx, sc.p, sc.want)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(sc.want) {
			t.Fatalf("record = %+v, %v", got, err)
		}
		h := b.Client.HGetAll(f.ctx, f.k.Event("ev-1")).Val()
		if _, pending := h["fanout"]; pending || b.Client.ZCard(f.ctx, f.k.Fanouts()).Val() != 0 {
			t.Fatalf("still pending after the record: %v", h)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Event("ev-1")).Val(); ttl <= 0 {
			t.Fatalf("the record lost its expiry (PTTL %s)", ttl)
		}
		other := append([]engine.EventRun(nil), sc.want...)
		other[0].Outcome = "deduplicated"
		got, err = f.s.RecordEventStep(f.ctx, sc.p, other)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(sc.want) {
			t.Fatalf("second record = %+v, %v; want the first's outcomes", got, err)
		}
		if ev, _ := f.s.GetEvent(f.ctx, "ev-1"); fmt.Sprint(ev.Runs) != fmt.Sprint(sc.want) {
			t.Fatalf("event = %+v", ev.Runs)
		}

		gone := f.event("ev-gone", "order.paid", f.eventRun("a", "k-gone", engine.StrategyTTL))
		if err := f.s.StoreEventStep(f.ctx, gone); err != nil {
			t.Fatal(err)
		}
		b.Client.Del(f.ctx, f.k.Event("ev-gone")) // as if its retention ended
		runs := []engine.EventRun{{Task: "a", Outcome: "created", RunID: "r"}}
		if got, err := f.s.RecordEventStep(f.ctx, gone, runs); err != nil || fmt.Sprint(got) != fmt.Sprint(runs) {
			t.Fatalf("record of a gone event = %+v, %v", got, err)
		}
		if f.exists(f.k.Event("ev-gone")) || b.Client.ZCard(f.ctx, f.k.Fanouts()).Val() != 0 {
			t.Fatal("recording a gone event wrote a record or kept its pending entry")
		}
	})
}

// A recoverer takes the fan-outs pending for longer than the grace period,
// at most limit of them, and no other recoverer takes them again before
// the grace period has passed once more; entries of events gone or no
// longer pending are dropped.
func TestTakeFanoutsTakesWhatIsPastTheGrace(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		grace := engine.FanoutGrace
		store := func(id string, at time.Time) *engine.PushEventParams {
			p := f.event(id, "k", f.eventRun("t", "k-"+id, engine.StrategyTTL))
			p.Now = at
			if err := f.s.StoreEventStep(f.ctx, p); err != nil {
				t.Fatal(err)
			}
			return p
		}
		old := f.now.Add(-2 * grace)
		store("ev-old-1", old)
		store("ev-old-2", old.Add(time.Millisecond))
		store("ev-old-3", old.Add(2*time.Millisecond))
		store("ev-young", f.now)
		store("ev-expired", old)
		b.Client.Del(f.ctx, f.k.Event("ev-expired"))
		done := store("ev-recorded", old)
		if _, err := f.s.RecordEventStep(f.ctx, done, nil); err != nil {
			t.Fatal(err)
		}
		b.Client.ZAdd(f.ctx, f.k.Fanouts(), redis.Z{Score: float64(old.UnixMilli()), Member: "ev-recorded"})

		ids, err := f.s.TakeFanoutsStep(f.ctx, f.now.Add(-grace), f.now, 3)
		if err != nil {
			t.Fatal(err)
		}
		// Of the first three entries looked at, two are stale.
		if fmt.Sprint(ids) != "[ev-old-1]" {
			t.Fatalf("took %v, want [ev-old-1]", ids)
		}
		for _, id := range []string{"ev-expired", "ev-recorded"} {
			if b.Client.ZScore(f.ctx, f.k.Fanouts(), id).Err() == nil {
				t.Errorf("the entry of %s was kept", id)
			}
		}
		if s := b.Client.ZScore(f.ctx, f.k.Fanouts(), "ev-old-1").Val(); int64(s) != f.now.UnixMilli() {
			t.Fatalf("a taken fan-out's time is %v, want now", s)
		}
		ids, _ = f.s.TakeFanoutsStep(f.ctx, f.now.Add(-grace), f.now, 10)
		if fmt.Sprint(ids) != "[ev-old-2 ev-old-3]" {
			t.Fatalf("second take = %v, want the two old ones left", ids)
		}
		if ids, _ := f.s.TakeFanoutsStep(f.ctx, f.now.Add(-grace), f.now, 10); len(ids) != 0 {
			t.Fatalf("took %v again within the grace period", ids)
		}
		later := f.now.Add(grace)
		if ids, _ := f.s.TakeFanoutsStep(f.ctx, later.Add(-grace), later, 10); len(ids) != 4 {
			t.Fatalf("a grace period later took %v, want the three taken before and the young one", ids)
		}
	})
}

// Wherever the ingester stops between storing the event and recording its
// outcomes (its hook fails, or Redis fails the next step), the push says
// the fan-out is pending, the event shows no outcomes, and a recovery once
// the grace period has passed finishes it: every task gets exactly one run
// or one recorded collision, as without the stop.
func TestFanoutStoppedBetweenStepsIsFinishedByRecovery(t *testing.T) {
	type stop struct {
		name      string
		step      engine.FanoutStep
		triggered int
		byRedis   bool
	}
	stops := []stop{{name: "after storing", step: engine.FanoutStored}}
	for n := 1; n <= 4; n++ {
		stops = append(stops, stop{name: fmt.Sprintf("after %d of 4 triggers", n), step: engine.FanoutTriggered, triggered: n})
	}
	stops = append(stops, stop{name: "Redis fails the triggers", step: engine.FanoutStored, byRedis: true},
		stop{name: "Redis fails the record", step: engine.FanoutTriggered, triggered: 4, byRedis: true})
	for _, st := range stops {
		t.Run(st.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				f := newFixture(t, b)
				sc := f.fanoutScenario("ev-1")
				after := stopAt(st.step, st.triggered)
				broken := &redistest.ScriptFailure{}
				if st.byRedis {
					b.Client.AddHook(broken)
					after = func(s engine.FanoutStep, _ string, n int) error {
						broken.Broken.Store(s == st.step && n == st.triggered)
						return nil
					}
				}
				_, err := f.inSteps(after).PushEvent(f.ctx, sc.p)
				broken.Broken.Store(false)
				var pending *engine.FanoutPendingError
				if !errors.As(err, &pending) || pending.EventID != "ev-1" || (st.byRedis && !errors.Is(err, io.EOF)) {
					t.Fatalf("stopped push: %v; want a *FanoutPendingError", err)
				}
				if ev, err := f.s.GetEvent(f.ctx, "ev-1"); err != nil || len(ev.Runs) != 0 {
					t.Fatalf("pending event = %+v, %v", ev, err)
				}
				if n, _ := f.runsByTask()["a"]; st.triggered == 0 && n != 0 {
					t.Fatalf("a run before any trigger")
				}
				taken, _, err := f.s.RecoverFanouts(f.ctx, f.now.Add(engine.FanoutGrace-time.Millisecond), engine.FanoutGrace, 10)
				if err != nil || taken != 0 {
					t.Fatalf("recovery within the grace period took %d (%v)", taken, err)
				}
				taken, finished, err := f.s.RecoverFanouts(f.ctx, f.now.Add(engine.FanoutGrace), engine.FanoutGrace, 10)
				if err != nil || taken != 1 || finished != 1 {
					t.Fatalf("recovery: took %d, finished %d, %v", taken, finished, err)
				}
				sc.check(t, f)
				for _, run := range sc.want {
					if run.Outcome == "created" {
						if in := b.Client.HGet(f.ctx, f.k.Run(run.RunID), "input").Val(); in != string(sc.p.Payload) {
							t.Errorf("run of %s has input %s, want the payload", run.Task, in)
						}
					}
				}
				if taken, _, _ := f.s.RecoverFanouts(f.ctx, f.now.Add(time.Hour), engine.FanoutGrace, 10); taken != 0 {
					t.Fatalf("a finished fan-out was taken again")
				}
			})
		})
	}
}

// Pushing the same event again (a caller's retry with the same ID, or
// go-redis sending step 1 again) finishes a fan-out left pending and
// answers its outcomes.
func TestPushEventAgainFinishesAPendingFanout(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		sc := f.fanoutScenario("ev-1")
		if _, err := f.inSteps(stopAt(engine.FanoutTriggered, 2)).PushEvent(f.ctx, sc.p); err == nil {
			t.Fatal("the stopped push succeeded")
		}
		runs, err := f.inSteps(nil).PushEvent(f.ctx, sc.p)
		if err != nil || fmt.Sprint(runs) != fmt.Sprint(sc.want) {
			t.Fatalf("push again = %+v, %v; want\n %+v", runs, err, sc.want)
		}
		sc.check(t, f)
	})
}

// An ingester that wakes after a recoverer took its fan-out over, and a
// recoverer that wakes after another took it over from it, each get the
// outcomes the first to finish recorded, and no task gets a second run.
func TestRecoverersRacingAnIngesterCreateEachRunOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		sc := f.fanoutScenario("ev-1")
		grace := engine.FanoutGrace
		// pausing stops its caller after the first trigger until resumed.
		pausing := func() (hook func(engine.FanoutStep, string, int) error, paused, resume chan struct{}) {
			paused, resume = make(chan struct{}), make(chan struct{})
			var once sync.Once
			return func(s engine.FanoutStep, _ string, n int) error {
				if s == engine.FanoutTriggered && n == 1 {
					once.Do(func() { close(paused); <-resume })
				}
				return nil
			}, paused, resume
		}
		type result struct {
			runs []engine.EventRun
			err  error
		}
		ingHook, ingPaused, ingResume := pausing()
		ingester := make(chan result, 1)
		go func() {
			runs, err := f.inSteps(ingHook).PushEvent(f.ctx, sc.p)
			ingester <- result{runs, err}
		}()
		<-ingPaused
		recHook, recPaused, recResume := pausing()
		slow := make(chan result, 1)
		go func() {
			_, _, err := f.inSteps(recHook).RecoverFanouts(f.ctx, f.now.Add(grace), grace, 10)
			slow <- result{nil, err}
		}()
		<-recPaused
		// Two more recoverers, a grace period later still: one takes the
		// fan-out over from the first and finishes it, the other finds
		// nothing to take.
		var wg sync.WaitGroup
		var took sync.Map
		for i := 0; i < 2; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				taken, finished, err := f.inSteps(nil).RecoverFanouts(f.ctx, f.now.Add(2*grace), grace, 10)
				if err != nil {
					t.Errorf("recoverer %d: %v", i, err)
				}
				took.Store(i, [2]int{taken, finished})
			}()
		}
		wg.Wait()
		a, _ := took.Load(0)
		c, _ := took.Load(1)
		if fmt.Sprint(a, c) != "[1 1] [0 0]" && fmt.Sprint(a, c) != "[0 0] [1 1]" {
			t.Fatalf("recoverers took and finished %v and %v; want one to finish it", a, c)
		}
		sc.check(t, f)
		close(recResume)
		if r := <-slow; r.err != nil {
			t.Fatalf("the recoverer that woke late: %v", r.err)
		}
		close(ingResume)
		r := <-ingester
		if r.err != nil || fmt.Sprint(r.runs) != fmt.Sprint(sc.want) {
			t.Fatalf("the ingester that woke late got %+v, %v; want\n %+v", r.runs, r.err, sc.want)
		}
		sc.check(t, f)
	})
}

// A task Redis refuses to trigger for good (its key holds a value of the
// wrong type) gets the error as its outcome; the others get their runs,
// and nothing stays pending.
func TestFanoutRecordsATaskRedisRefusesForGood(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.event("ev-1", "k", f.eventRun("t1", "a", engine.StrategyTTL), f.eventRun("t2", "b", engine.StrategyTTL))
		b.Client.HSet(f.ctx, f.k.IdempotencyKey("b"), "x", "y")
		runs, err := f.inSteps(nil).PushEvent(f.ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if runs[0].Outcome != "created" || runs[1].Outcome != "error" || runs[1].RunID != "" ||
			!strings.Contains(runs[1].Error, "wrong type") && !strings.Contains(runs[1].Error, "holds a hash") {
			t.Fatalf("runs = %+v", runs)
		}
		if ev, _ := f.s.GetEvent(f.ctx, "ev-1"); fmt.Sprint(ev.Runs) != fmt.Sprint(runs) {
			t.Fatalf("event records %+v", ev.Runs)
		}
		if n := b.Client.ZCard(f.ctx, f.k.Fanouts()).Val(); n != 0 {
			t.Fatal("the fan-out stayed pending")
		}
	})
}
