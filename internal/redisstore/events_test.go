package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
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

func TestPushEventWritesNothingWhenAnyWriteWouldFail(t *testing.T) {
	cases := []struct {
		name  string
		plant func(f *fixture, p *engine.PushEventParams)
		is    error
	}{
		{"event exists", func(f *fixture, p *engine.PushEventParams) {
			f.b.Client.HSet(f.ctx, f.k.Event(p.ID), "key", "old")
		}, engine.ErrEventExists},
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
		}, engine.ErrRunExists},
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
		if _, err := f.s.PushEvent(f.ctx, &other); !errors.Is(err, engine.ErrEventExists) {
			t.Fatalf("another event under a taken ID: %v", err)
		}
	})
}
