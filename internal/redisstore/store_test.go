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

type fixture struct {
	t     *testing.T
	b     *redistest.Backend
	s     *redisstore.Store
	k     redisstore.Keys
	ctx   context.Context
	now   time.Time
	runNo int
}

func newFixture(t *testing.T, b *redistest.Backend) *fixture {
	// One partition on every backend, the cluster's too (whose default is
	// one per master): these tests check keys of the home partition by name, so every
	// run must live there. Partitioned namespaces, on one node and on the
	// cluster, are the partitions tests' and the client's and worker's.
	s := redisstore.NewPartitioned(b.Client, b.Namespace, 1)
	// The namespace is in use: its partition count is recorded.
	if _, err := s.Partitions(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, b: b, s: s, k: s.Keys(), ctx: context.Background(), now: time.Now()}
}

func (f *fixture) params(task, key string, strat engine.Strategy) *engine.EnqueueParams {
	f.runNo++
	return &engine.EnqueueParams{
		RunID: fmt.Sprintf("run-%d", f.runNo), Task: task, Input: []byte(`{"id":"1"}`), Meta: []byte(`{}`),
		Key: key, Strategy: strat, Hold: time.Minute, Retries: 1, MaxDeliveries: 3,
		Retention: time.Hour, Now: f.now,
	}
}

// statusRuns returns the parameters of one status-strategy trigger of task
// per key.
func (f *fixture) statusRuns(task string, keys ...string) []*engine.EnqueueParams {
	ps := make([]*engine.EnqueueParams, len(keys))
	for i, k := range keys {
		ps[i] = f.params(task, k, engine.StrategyStatus)
	}
	return ps
}

// running enqueues p, the only queued run of its task, and starts it for
// consumer.
func (f *fixture) running(p *engine.EnqueueParams, consumer string) engine.StartResult {
	f.t.Helper()
	f.enqueue(p)
	ds := f.read(p.Task, consumer)
	if len(ds) != 1 {
		f.t.Fatalf("read %d deliveries of %s, want 1", len(ds), p.Task)
	}
	return f.start(ds[0], consumer)
}

func (f *fixture) enqueue(p *engine.EnqueueParams) engine.EnqueueResult {
	f.t.Helper()
	r, err := f.s.Enqueue(f.ctx, p)
	if err != nil {
		f.t.Fatalf("enqueue: %v", err)
	}
	return r
}

func (f *fixture) exists(key string) bool {
	n, err := f.b.Client.Exists(f.ctx, key).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n == 1
}

// read delivers the next entries of task to consumer.
func (f *fixture) read(task, consumer string) []engine.Delivery {
	f.t.Helper()
	if err := f.s.EnsureGroup(f.ctx, task); err != nil {
		f.t.Fatal(err)
	}
	ds, err := f.s.ReadGroup(f.ctx, 0, consumer, []string{task}, 10, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	return ds
}

func (f *fixture) start(d engine.Delivery, consumer string) engine.StartResult {
	f.t.Helper()
	r, err := f.s.Start(f.ctx, &engine.StartParams{RunID: d.RunID, Task: d.Task, EntryID: d.EntryID, Consumer: consumer, Now: f.now})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

func (f *fixture) finish(runID string, attempt int, o engine.Outcome, payload string) engine.FinishResult {
	f.t.Helper()
	r, err := f.s.Finish(f.ctx, &engine.FinishParams{RunID: runID, Attempt: attempt, Outcome: o, Payload: []byte(payload), Now: f.now, RetryAt: f.now})
	if err != nil {
		f.t.Fatal(err)
	}
	return r
}

// Redis does not roll back a script that fails midway, so enqueue.lua
// checks every key before its first write. Each case plants a value of the
// wrong type where one of its writes goes and checks nothing was written.
func TestEnqueueWritesNothingWhenAnyWriteWouldFail(t *testing.T) {
	cases := []struct {
		name  string
		plant func(f *fixture, p *engine.EnqueueParams)
	}{
		{"idempotency key is a hash", func(f *fixture, p *engine.EnqueueParams) {
			f.b.Client.HSet(f.ctx, f.k.IdempotencyKey(p.Key), "x", "y")
		}},
		{"run record is a list", func(f *fixture, p *engine.EnqueueParams) {
			f.b.Client.RPush(f.ctx, f.k.Run(p.RunID), "x")
		}},
		{"stream is a string", func(f *fixture, p *engine.EnqueueParams) {
			f.b.Client.Set(f.ctx, f.k.Stream(p.Task), "x", 0)
		}},
		{"runs index is a string", func(f *fixture, p *engine.EnqueueParams) {
			f.b.Client.Set(f.ctx, f.k.Runs(), "x", 0)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				f := newFixture(t, b)
				p := f.params("atomic", "k1", engine.StrategyStatus)
				tc.plant(f, p)
				before := map[string]string{}
				for _, k := range []string{f.k.IdempotencyKey("k1"), f.k.Run(p.RunID), f.k.Stream("atomic"), f.k.Runs()} {
					before[k] = b.Client.Type(f.ctx, k).Val()
				}
				_, err := f.s.Enqueue(f.ctx, p)
				if err == nil {
					t.Fatal("enqueue succeeded over a wrong-typed key")
				}
				if !errors.Is(err, engine.ErrWrongType) && !errors.Is(err, engine.ErrRunExists) {
					t.Fatalf("error %v is neither ErrWrongType nor engine.ErrRunExists", err)
				}
				for k, typ := range before {
					if got := b.Client.Type(f.ctx, k).Val(); got != typ {
						t.Errorf("%s changed from %s to %s", k, typ, got)
					}
				}
				if typ := before[f.k.IdempotencyKey("k1")]; typ == "none" && f.exists(f.k.IdempotencyKey("k1")) {
					t.Error("key claimed although the run was not created")
				}
			})
		})
	}
}

func TestEnqueueBatchDeduplicatesWithinBatch(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		ps := []*engine.EnqueueParams{
			f.params("t", "a", engine.StrategyTTL), f.params("t", "b", engine.StrategyTTL), f.params("t", "a", engine.StrategyTTL),
		}
		// Flush the script cache first: the batch must load it and still
		// work. Only on miniredis: the shared server's cache is not ours.
		if !b.Real() {
			b.Client.ScriptFlush(f.ctx)
		}
		res, errs := f.s.EnqueueBatch(f.ctx, ps)
		for i, e := range errs {
			if e != nil {
				t.Fatalf("item %d: %v", i, e)
			}
		}
		if !res[0].Accepted || !res[1].Accepted || res[2].Accepted || res[2].Owner != ps[0].RunID {
			t.Fatalf("batch results = %+v", res)
		}
	})
}

// go-redis sends a script again when its reply was lost; the resend must
// report what the first send did, not a collision with itself.
func TestEnqueueResendReportsTheFirstSend(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		for _, strat := range []engine.Strategy{engine.StrategyStatus, engine.StrategyNone} {
			p := f.params("resend", "k-"+string(strat), strat)
			first := f.enqueue(p)
			again := f.enqueue(p)
			if !again.Accepted || again.EntryID != first.EntryID {
				t.Fatalf("%s: resend = %+v, want the first send's %+v", strat, again, first)
			}
			if n := b.Client.XLen(f.ctx, f.k.Stream("resend")).Val(); n != int64(f.runNo) {
				t.Fatalf("%s: resend queued the run again: %d entries", strat, n)
			}
		}
		// Another trigger with a taken run ID (not a resend) is refused.
		p := f.params("resend", "", engine.StrategyNone)
		f.enqueue(p)
		p2 := *p
		p2.Task = "other"
		if _, err := f.s.Enqueue(f.ctx, &p2); !errors.Is(err, engine.ErrRunExists) {
			t.Fatalf("reused run ID: %v, want engine.ErrRunExists", err)
		}
	})
}
