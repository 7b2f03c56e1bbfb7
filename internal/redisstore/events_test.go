package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

func (f *fixture) event(id, key string, tasks ...engine.EventTask) *engine.PushEventParams {
	return &engine.PushEventParams{
		ID: id, Key: key, Payload: []byte(`{"id":"1"}`), Meta: []byte(`{"tenant":"a"}`),
		Now: f.now, Retention: time.Hour, Tasks: tasks,
	}
}

// eachFanout runs fn on every backend, each time in a namespace of its
// own: with the fan-out in one script, as on one partition, and in steps,
// as when the runs of an event live in other partitions than the event. A
// fan-out in steps leaves nothing pending.
func eachFanout(t *testing.T, fn func(t *testing.T, b *redistest.Backend, f *fixture)) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		t.Run("at once", func(t *testing.T) { fn(t, b, newFixture(t, b)) })
		t.Run("in steps", func(t *testing.T) {
			own := *b
			own.Namespace = redistest.Namespace(t)
			t.Cleanup(func() { redistest.DeleteNamespace(context.Background(), b.Client, own.Namespace) })
			f := newFixture(t, &own)
			f.s.SetFanoutHooks(&engine.FanoutHooks{Steps: true})
			fn(t, &own, f)
			if n := b.Client.ZCard(f.ctx, f.k.Fanouts()).Val(); n != 0 {
				t.Errorf("%d fan-outs left pending", n)
			}
		})
	})
}

// eventRun is the run a subscribed task gets, described as for Enqueue.
func (f *fixture) eventRun(task, key string, strat engine.Strategy) engine.EventTask {
	p := f.params(task, key, strat)
	p.Input, p.Meta = []byte(`{"id":"1"}`), []byte(`{"tenant":"a"}`)
	return engine.EventTask{Run: p}
}

func (f *fixture) push(p *engine.PushEventParams) []engine.EventRun {
	f.t.Helper()
	runs, err := f.s.PushEvent(f.ctx, p)
	if err != nil {
		f.t.Fatalf("push event: %v", err)
	}
	return runs
}

// A run created by an event is recorded exactly as Enqueue records a run
// with the same parameters.
func TestPushEventCreatesRunsLikeEnqueue(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		direct := f.params("mail", "direct:1", engine.StrategyStatus)
		direct.Input, direct.Meta = []byte(`{"id":"1"}`), []byte(`{"tenant":"a"}`)
		f.enqueue(direct)
		viaEvent := f.eventRun("mail", "event:1", engine.StrategyStatus)
		runs := f.push(f.event("ev-1", "user.created", viaEvent))
		if len(runs) != 1 || runs[0].Outcome != engine.EventRunCreated || runs[0].RunID != viaEvent.Run.RunID {
			t.Fatalf("runs = %+v", runs)
		}
		a := b.Client.HGetAll(f.ctx, f.k.Run(direct.RunID)).Val()
		e := b.Client.HGetAll(f.ctx, f.k.Run(viaEvent.Run.RunID)).Val()
		for _, field := range []string{"key", "entry"} {
			if e[field] == "" {
				t.Errorf("event run has no %s", field)
			}
			delete(a, field)
			delete(e, field)
		}
		if fmt.Sprint(a) != fmt.Sprint(e) {
			t.Fatalf("run records differ:\n enqueue: %v\n event:   %v", a, e)
		}
		if owner := b.Client.Get(f.ctx, f.k.IdempotencyKey("event:1")).Val(); owner != viaEvent.Run.RunID {
			t.Fatalf("key owner = %q", owner)
		}
		if ds := f.read("mail", "c1"); len(ds) != 2 || ds[1].RunID != viaEvent.Run.RunID {
			t.Fatalf("deliveries = %+v", ds)
		}
		ev, err := f.s.GetEvent(f.ctx, "ev-1")
		if err != nil {
			t.Fatal(err)
		}
		if ev.Key != "user.created" || string(ev.Payload) != `{"id":"1"}` || string(ev.Meta) != `{"tenant":"a"}` ||
			ev.Created.UnixMilli() != f.now.UnixMilli() || len(ev.Runs) != 1 || ev.Runs[0] != runs[0] {
			t.Fatalf("event = %+v", ev)
		}
	})
}

// A held key is swallowed: no run, the event names the owner. Two tasks of
// one event with the same key get one run between them. A task whose
// expression failed is recorded and the others still run.
func TestPushEventDeduplicatesAndRecordsErrors(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		held := f.params("other", "k-held", engine.StrategyTTL)
		f.enqueue(held)
		a := f.eventRun("a", "k-held", engine.StrategyTTL)
		bb := f.eventRun("b", "k-same", engine.StrategyTTL)
		c := f.eventRun("c", "k-same", engine.StrategyStatus)
		d := engine.EventTask{Task: "d", Error: "evaluating input.missing: no such key"}
		e := f.eventRun("e", "", engine.StrategyNone)
		runs := f.push(f.event("ev-1", "k", a, bb, c, d, e))
		want := []engine.EventRun{
			{Task: "a", Outcome: "deduplicated", RunID: held.RunID, IdempotencyKey: "k-held"},
			{Task: "b", Outcome: "created", RunID: bb.Run.RunID, IdempotencyKey: "k-same"},
			{Task: "c", Outcome: "deduplicated", RunID: bb.Run.RunID, IdempotencyKey: "k-same"},
			{Task: "d", Outcome: "error", Error: d.Error},
			{Task: "e", Outcome: "created", RunID: e.Run.RunID},
		}
		if fmt.Sprint(runs) != fmt.Sprint(want) {
			t.Fatalf("runs =\n %+v\nwant\n %+v", runs, want)
		}
		for _, gone := range []string{a.Run.RunID, c.Run.RunID} {
			if f.exists(f.k.Run(gone)) {
				t.Errorf("run %s was created although its key was held", gone)
			}
		}
		if n := b.Client.ZCard(f.ctx, f.k.Runs()).Val(); n != 3 {
			t.Errorf("runs index has %d runs, want 3", n)
		}
		if owner := b.Client.Get(f.ctx, f.k.IdempotencyKey("k-same")).Val(); owner != bb.Run.RunID {
			t.Errorf("k-same owner = %q, want %q", owner, bb.Run.RunID)
		}
		ev, _ := f.s.GetEvent(f.ctx, "ev-1")
		if fmt.Sprint(ev.Runs) != fmt.Sprint(want) {
			t.Fatalf("stored runs = %+v", ev.Runs)
		}
	})
}

func TestPushEventWritesNothingWhenAnyWriteWouldFail(t *testing.T) {
	cases := []struct {
		name  string
		plant func(f *fixture, p *engine.PushEventParams)
		is    error
	}{
		{"event exists", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.HSet(f.ctx, f.k.Event(p.ID), "key", "old")
		}, redisstore.ErrEventExists},
		{"events index is a string", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.Set(f.ctx, f.k.Events(), "x", 0)
		}, engine.ErrWrongType},
		{"key index is a list", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.RPush(f.ctx, f.k.EventKeyIndex(p.Key), "x")
		}, engine.ErrWrongType},
		{"second task's key is a hash", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.HSet(f.ctx, f.k.IdempotencyKey(p.Tasks[1].Run.Key), "x", "y")
		}, engine.ErrWrongType},
		{"second task's stream is a string", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.Set(f.ctx, f.k.Stream(p.Tasks[1].Run.Task), "x", 0)
		}, engine.ErrWrongType},
		{"second task's run exists", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.HSet(f.ctx, f.k.Run(p.Tasks[1].Run.RunID), "x", "y")
		}, redisstore.ErrRunExists},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				f := newFixture(t, b)
				p := f.event("ev-1", "k", f.eventRun("t1", "a", engine.StrategyTTL), f.eventRun("t2", "b", engine.StrategyTTL))
				tc.plant(f, p)
				before := f.snapshot()
				_, err := f.s.PushEvent(f.ctx, p)
				if !errors.Is(err, tc.is) {
					t.Fatalf("error = %v, want %v", err, tc.is)
				}
				if after := f.snapshot(); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Fatalf("keys changed:\n before %v\n after  %v", before, after)
				}
			})
		})
	}
}

// snapshot maps every key of the namespace to its type.
func (f *fixture) snapshot() map[string]string {
	f.t.Helper()
	keys, err := redistest.Keys(f.ctx, f.b.Client, "taskq:{"+f.b.Namespace+"}:*")
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]string{}
	for _, k := range keys {
		m[k] = f.b.Client.Type(f.ctx, k).Val()
	}
	return m
}

// Event records expire after their retention; the per-key index trims
// itself and SweepEvents trims the global one.
func TestEventRetention(t *testing.T) {
	b := redistest.Mini(t)
	f := newFixture(t, b)
	old := f.event("ev-old", "k")
	f.push(old)
	if ttl := b.Client.PTTL(f.ctx, f.k.Event("ev-old")).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("event PTTL = %s, want at most an hour", ttl)
	}
	b.Mini.FastForward(time.Hour + time.Second)
	f.now = f.now.Add(time.Hour + time.Second)
	f.push(f.event("ev-new", "k"))
	if _, err := f.s.GetEvent(f.ctx, "ev-old"); !errors.Is(err, engine.ErrEventNotFound) {
		t.Fatalf("expired event: %v", err)
	}
	if ids, _ := f.s.ListEventIDs(f.ctx, "k", 0, 10); fmt.Sprint(ids) != "[ev-new]" {
		t.Fatalf("key index = %v", ids)
	}
	if ids, _ := f.s.ListEventIDs(f.ctx, "", 0, 10); len(ids) != 2 {
		t.Fatalf("events index before the sweep = %v", ids)
	}
	removed, looked, err := f.s.SweepEvents(f.ctx, 0, f.now.Add(-time.Hour), 0, 100)
	if err != nil || removed != 1 || looked != 1 {
		t.Fatalf("sweep = %d, %d, %v", removed, looked, err)
	}
	if ids, _ := f.s.ListEventIDs(f.ctx, "", 0, 10); fmt.Sprint(ids) != "[ev-new]" {
		t.Fatalf("events index = %v", ids)
	}
	b.Mini.FastForward(time.Hour + time.Second)
	if f.exists(f.k.EventKeyIndex("k")) {
		t.Fatal("the key index outlived its newest event")
	}
}

// A batch goes out in one pipeline, loads the script when the server lacks
// it, and a later event is deduplicated to a run an earlier one created.
func TestPushEventsBatch(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		if !b.Real() {
			b.Client.ScriptFlush(f.ctx)
		}
		first := f.eventRun("t", "same", engine.StrategyTTL)
		second := f.eventRun("t", "same", engine.StrategyTTL)
		res, errs := f.s.PushEvents(f.ctx, []*engine.PushEventParams{f.event("ev-1", "k", first), f.event("ev-2", "k", second)})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("event %d: %v", i, err)
			}
		}
		if res[0][0].Outcome != "created" || res[1][0].Outcome != "deduplicated" || res[1][0].RunID != first.Run.RunID {
			t.Fatalf("results = %+v", res)
		}
		evs, err := f.s.GetEvents(f.ctx, []string{"ev-2", "missing", "ev-1"})
		if err != nil || len(evs) != 2 || evs[0].ID != "ev-2" || evs[1].ID != "ev-1" {
			t.Fatalf("GetEvents = %+v, %v", evs, err)
		}
		ids, _ := f.s.ListEventIDs(f.ctx, "k", 0, 1)
		if len(ids) != 1 {
			t.Fatalf("page = %v", ids)
		}
	})
}

// A debounced task hands a later event's payload to its waiting run and
// restarts the window, as a direct trigger does.
func TestPushEventDebounce(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		first := f.eventRun("d", "deb", engine.StrategyDebounce)
		if r := f.push(f.event("ev-1", "k", first)); r[0].Outcome != "created" {
			t.Fatalf("first = %+v", r)
		}
		if st := b.Client.HGet(f.ctx, f.k.Run(first.Run.RunID), "entry").Val(); st != "" {
			t.Fatalf("a debounced run was queued at once (entry %q)", st)
		}
		second := f.event("ev-2", "k", f.eventRun("d", "deb", engine.StrategyDebounce))
		second.Payload = []byte(`{"id":"2"}`)
		f.now = f.now.Add(time.Second)
		second.Now = f.now
		r := f.push(second)
		if r[0].Outcome != "debounced" || r[0].RunID != first.Run.RunID {
			t.Fatalf("second = %+v", r)
		}
		if in := b.Client.HGet(f.ctx, f.k.Run(first.Run.RunID), "input").Val(); in != `{"id":"2"}` {
			t.Fatalf("waiting run's input = %s", in)
		}
		due := b.Client.ZScore(f.ctx, f.k.Retry(), first.Run.RunID).Val()
		if int64(due) != f.now.Add(time.Minute).UnixMilli() {
			t.Fatalf("window not restarted: due %d", int64(due))
		}
	})
}

// A push whose script runs a second time (go-redis resends a command after
// a broken connection) reports what the first run did, not a conflict with
// itself.
func TestPushEventResentReportsFirstOutcome(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		p := f.event("ev-1", "k", f.eventRun("t", "key-1", engine.StrategyTTL))
		first := f.push(p)
		again, err := f.s.PushEvent(f.ctx, p)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("resent push = %+v, %v; want %+v", again, err, first)
		}
		res, errs := f.s.PushEvents(f.ctx, []*engine.PushEventParams{p})
		if errs[0] != nil || fmt.Sprint(res[0]) != fmt.Sprint(first) {
			t.Fatalf("resent batch push = %+v, %v", res, errs)
		}
		if n := b.Client.ZCard(f.ctx, f.k.Runs()).Val(); n != 1 {
			t.Fatalf("%d runs, want 1", n)
		}
		other := *p
		other.Payload = []byte(`{"id":"2"}`)
		if _, err := f.s.PushEvent(f.ctx, &other); !errors.Is(err, redisstore.ErrEventExists) {
			t.Fatalf("another event under a taken ID: %v", err)
		}
	})
}
