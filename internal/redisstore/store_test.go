package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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
	// 16): these tests check keys of the home partition by name, so every
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

func TestEnqueueClaimsKeyCreatesRunAndQueues(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("email", "order:1", engine.StrategyStatus)
		r := f.enqueue(p)
		if !r.Accepted || r.EntryID == "" {
			t.Fatalf("first trigger not accepted: %+v", r)
		}
		owner, _ := b.Client.Get(f.ctx, f.k.IdempotencyKey("order:1")).Result()
		if owner != p.RunID {
			t.Fatalf("key owner = %q, want %q", owner, p.RunID)
		}
		run, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil || run.Status != engine.StatusQueued || run.Key != "order:1" || run.Task != "email" {
			t.Fatalf("run = %+v, %v", run, err)
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("email")).Val(); n != 1 {
			t.Fatalf("stream length = %d, want 1", n)
		}

		dup := f.params("email", "order:1", engine.StrategyStatus)
		r2 := f.enqueue(dup)
		if r2.Accepted || r2.Owner != p.RunID || r2.OwnerTTL <= 0 || r2.OwnerTTL > time.Minute {
			t.Fatalf("duplicate = %+v, want collision naming %s", r2, p.RunID)
		}
		if f.exists(f.k.Run(dup.RunID)) {
			t.Fatal("a collision created a run record")
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("email")).Val(); n != 1 {
			t.Fatalf("a collision queued a run: stream length %d", n)
		}
	})
}

func TestEnqueueWithoutStrategyClaimsNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		for i := 0; i < 2; i++ {
			if r := f.enqueue(f.params("plain", "", engine.StrategyNone)); !r.Accepted {
				t.Fatalf("trigger %d not accepted", i)
			}
		}
		keys, _, _ := f.s.ScanKeys(f.ctx, "*", "", 100)
		if len(keys) != 0 {
			t.Fatalf("keys claimed without a strategy: %v", keys)
		}
	})
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
				if !errors.Is(err, engine.ErrWrongType) && !errors.Is(err, redisstore.ErrRunExists) {
					t.Fatalf("error %v is neither ErrWrongType nor ErrRunExists", err)
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

func TestStartFinishReleasesStatusKeyOnlyForOwner(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		ds := f.read("t", "c1")
		if len(ds) != 1 || ds[0].RunID != p.RunID {
			t.Fatalf("deliveries = %+v", ds)
		}
		st := f.start(ds[0], "c1")
		if !st.Started || st.Attempt != 1 || string(st.Spec.Input) != `{"id":"1"}` || st.Spec.Key != "k" {
			t.Fatalf("start = %+v", st)
		}
		// The key lapsed and another run claimed it.
		b.Client.Set(f.ctx, f.k.IdempotencyKey("k"), "newer-run", time.Minute)
		if r := f.finish(p.RunID, 1, engine.OutcomeSucceeded, `{"ok":true}`); !r.Written || r.Status != "succeeded" {
			t.Fatalf("finish = %+v", r)
		}
		if owner := b.Client.Get(f.ctx, f.k.IdempotencyKey("k")).Val(); owner != "newer-run" {
			t.Fatalf("finished run released the newer owner's key: owner now %q", owner)
		}
		run, _ := f.s.GetRun(f.ctx, p.RunID)
		if string(run.Result) != `{"ok":true}` || run.Status != "succeeded" {
			t.Fatalf("run = %+v", run)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Run(p.RunID)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("finished run has no retention expiry: %v", ttl)
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("finished run left %d stream entries", n)
		}
	})
}

func TestFinishReleasesOrRetainsStatusKey(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "released", engine.StrategyStatus)
		f.running(p, "c")
		f.finish(p.RunID, 1, engine.OutcomeFailed, "boom")
		if f.exists(f.k.IdempotencyKey("released")) {
			t.Fatal("status key not released after the run failed")
		}

		q := f.params("t", "kept", engine.StrategyStatus)
		q.Retain = 30 * time.Second
		f.running(q, "c")
		f.finish(q.RunID, 1, engine.OutcomeSucceeded, "{}")
		if ttl := b.Client.PTTL(f.ctx, f.k.IdempotencyKey("kept")).Val(); ttl <= 0 || ttl > 30*time.Second {
			t.Fatalf("retained key ttl = %v, want (0, 30s]", ttl)
		}

		r := f.params("t", "window", engine.StrategyTTL)
		f.running(r, "c")
		f.finish(r.RunID, 1, engine.OutcomeSucceeded, "{}")
		if ttl := b.Client.PTTL(f.ctx, f.k.IdempotencyKey("window")).Val(); ttl <= 30*time.Second {
			t.Fatalf("ttl key changed when the run ended: ttl %v", ttl)
		}
	})
}

func TestFinishIsFencedByAttempt(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		d := f.read("t", "old")[0]
		f.start(d, "old")
		// The old consumer stalls; another reclaims the delivery.
		claimed, err := f.s.AutoClaim(f.ctx, 0, "t", "new", 0, 10)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("autoclaim = %v, %v", claimed, err)
		}
		st := f.start(claimed[0], "new")
		if st.Attempt != 2 {
			t.Fatalf("redelivered attempt = %d, want 2", st.Attempt)
		}
		if r := f.finish(p.RunID, 1, engine.OutcomeSucceeded, `"stale"`); r.Written || r.Status != "stale" {
			t.Fatalf("stale finish = %+v, want refused as stale", r)
		}
		if !f.exists(f.k.IdempotencyKey("k")) {
			t.Fatal("stale attempt released the key")
		}
		f.finish(p.RunID, 2, engine.OutcomeSucceeded, `"fresh"`)
		run, _ := f.s.GetRun(f.ctx, p.RunID)
		if string(run.Result) != `"fresh"` {
			t.Fatalf("result = %s", run.Result)
		}
	})
}

func TestRetryKeepsKeyAndPromoteRequeues(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.running(p, "c")
		_, err := f.s.Finish(f.ctx, &engine.FinishParams{RunID: p.RunID, Attempt: 1, Outcome: engine.OutcomeRetry,
			Payload: []byte("transient"), Now: f.now, RetryAt: f.now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		run, _ := f.s.GetRun(f.ctx, p.RunID)
		if run.Status != "queued" || run.Fails != 1 || run.Error != "transient" {
			t.Fatalf("run after retry = %+v", run)
		}
		if !f.exists(f.k.IdempotencyKey("k")) {
			t.Fatal("key released while the run is retrying")
		}
		// Not due yet: nothing moves, and the call says when it will be.
		if n, next, err := f.s.PromoteDue(f.ctx, 0, f.now, 10); err != nil || n != 0 || next.UnixMilli() != f.now.Add(time.Hour).UnixMilli() {
			t.Fatalf("promote before due = %d, next %v, %v; want 0, next %v", n, next, err, f.now.Add(time.Hour))
		}
		if n, next, err := f.s.PromoteDue(f.ctx, 0, f.now.Add(2*time.Hour), 10); err != nil || n != 1 || !next.IsZero() {
			t.Fatalf("promote = %d, next %v, %v; want 1 and none left", n, next, err)
		}
		ds := f.read("t", "c")
		if len(ds) != 1 || ds[0].RunID != p.RunID {
			t.Fatalf("retry not redelivered: %+v", ds)
		}
		if st := f.start(ds[0], "c"); st.Attempt != 2 || st.Spec.Fails != 1 {
			t.Fatalf("retry start = %+v", st)
		}
	})
}

func TestStartSkipsStaleTerminalAndExhausted(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		// A cancelled run's delivery is skipped.
		p := f.params("t", "", engine.StrategyNone)
		f.enqueue(p)
		d := f.read("t", "c")[0]
		if _, err := f.s.Cancel(f.ctx, p.RunID, "test", f.now); err != nil {
			t.Fatal(err)
		}
		if st := f.start(d, "c"); st.Started || st.Reason != "cancelled" {
			t.Fatalf("start of cancelled run = %+v", st)
		}
		// A delivery of a missing run is dropped.
		if st := f.start(engine.Delivery{Task: "t", RunID: "nope", EntryID: d.EntryID}, "c"); st.Reason != "missing" {
			t.Fatalf("start of missing run = %+v", st)
		}
		// Too many deliveries fail the run and release its key.
		q := f.params("t", "k", engine.StrategyStatus)
		q.MaxDeliveries = 1
		f.enqueue(q)
		d = f.read("t", "c")[0]
		f.start(d, "c")
		claimed, _ := f.s.AutoClaim(f.ctx, 0, "t", "c2", 0, 10)
		if st := f.start(claimed[0], "c2"); st.Started || st.Reason != "exhausted" {
			t.Fatalf("start past max deliveries = %+v", st)
		}
		run, _ := f.s.GetRun(f.ctx, q.RunID)
		if run.Status != "failed" || f.exists(f.k.IdempotencyKey("k")) {
			t.Fatalf("exhausted run = %+v, key held %v", run, f.exists(f.k.IdempotencyKey("k")))
		}
	})
}

func TestCancelReleasesAndPublishes(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.running(p, "c")
		chans := []string{f.k.CancelChannel(), f.k.DoneChannel(p.RunID), f.k.FinishedChannel()}
		ps := subscribeNotices(t, f.s, chans...)
		if st, err := f.s.WatchRun(f.ctx, p.RunID); err != nil || st != "running" {
			t.Fatalf("watch = %q, %v", st, err)
		}
		r, err := f.s.Cancel(f.ctx, p.RunID, "by test", f.now)
		if err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		got := receive(t, ps, len(chans))
		if fmt.Sprint(got[f.k.CancelChannel()]) != "["+p.RunID+"]" || fmt.Sprint(got[f.k.DoneChannel(p.RunID)]) != "[cancelled]" ||
			fmt.Sprint(got[f.k.FinishedChannel()]) != "[cancelled 1]" {
			t.Fatalf("notices = %v", got)
		}
		if f.exists(f.k.IdempotencyKey("k")) {
			t.Fatal("cancel did not release the key")
		}
		if r, _ := f.s.Cancel(f.ctx, p.RunID, "again", f.now); r.Written || r.Status != "cancelled" {
			t.Fatalf("second cancel = %+v", r)
		}
		if r := f.finish(p.RunID, 1, engine.OutcomeSucceeded, "{}"); r.Written {
			t.Fatal("finish overwrote a cancelled run")
		}
	})
}

func TestHeartbeatExtendsOnlyOwnLeases(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p1, p2, p3 := f.params("t", "", engine.StrategyNone), f.params("t", "", engine.StrategyNone), f.params("t", "", engine.StrategyNone)
		f.enqueue(p1)
		f.enqueue(p2)
		f.enqueue(p3)
		ds := f.read("t", "me")
		var leases []engine.Lease
		for _, d := range ds {
			st := f.start(d, "me")
			leases = append(leases, engine.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt})
		}
		// p2's delivery is taken over by another consumer; p3 is cancelled.
		if err := b.Client.XClaim(f.ctx, &redis.XClaimArgs{Stream: f.k.Stream("t"), Group: redisstore.GroupName,
			Consumer: "other", Messages: []string{ds[1].EntryID}}).Err(); err != nil {
			t.Fatal(err)
		}
		f.s.Cancel(f.ctx, p3.RunID, "x", f.now)
		stale := leases[0]
		stale.Attempt = 0 // an older attempt of p1
		states, err := f.s.Heartbeat(f.ctx, "t", "me", append(leases, stale))
		if err != nil {
			t.Fatal(err)
		}
		want := []engine.LeaseState{engine.LeaseHeld, engine.LeaseLost, engine.LeaseFinished, engine.LeaseStale}
		for i := range want {
			if states[i].State != want[i] {
				t.Fatalf("states = %v, want %v", states, want)
			}
		}
		if states[2].Reason != "x" {
			t.Fatalf("cancelled run's reason = %q, want the cancel reason", states[2].Reason)
		}
		pend, _ := b.Client.XPendingExt(f.ctx, &redis.XPendingExtArgs{Stream: f.k.Stream("t"), Group: redisstore.GroupName,
			Start: ds[1].EntryID, End: ds[1].EntryID, Count: 1}).Result()
		if len(pend) != 1 || pend[0].Consumer != "other" {
			t.Fatalf("heartbeat took a delivery back from another consumer: %+v", pend)
		}
	})
}

func TestRequeueGivesRunBack(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "", engine.StrategyNone)
		f.running(p, "c")
		if r, err := f.s.Requeue(f.ctx, p.RunID, "t", 1); err != nil || !r.Written {
			t.Fatalf("requeue = %+v, %v", r, err)
		}
		if r, _ := f.s.Requeue(f.ctx, p.RunID, "t", 1); r.Written {
			t.Fatal("requeue of a queued run wrote")
		}
		ds := f.read("t", "c2")
		if len(ds) != 1 || ds[0].RunID != p.RunID {
			t.Fatalf("requeued run not delivered: %+v", ds)
		}
		if st := f.start(ds[0], "c2"); !st.Started || st.Attempt != 2 {
			t.Fatalf("start after requeue = %+v", st)
		}
	})
}

func TestSweepRemovesOnlyExpiredIndexEntries(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		live, gone := f.params("t", "", engine.StrategyNone), f.params("t", "", engine.StrategyNone)
		f.enqueue(live)
		f.enqueue(gone)
		b.Client.Del(f.ctx, f.k.Run(gone.RunID))
		removed, looked, err := f.s.SweepRuns(f.ctx, 0, f.now.Add(time.Second), 0, 100)
		if err != nil || removed != 1 || looked != 2 {
			t.Fatalf("sweep = %d removed, %d looked, %v", removed, looked, err)
		}
		ids, _ := f.s.ListRunIDs(f.ctx, 0, 10)
		if len(ids) != 1 || ids[0] != live.RunID {
			t.Fatalf("index = %v", ids)
		}
	})
}

func TestReleaseKeyIsCompareAndDelete(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		b.Client.Set(f.ctx, f.k.IdempotencyKey("k"), "owner-2", time.Minute)
		if ok, _ := f.s.ReleaseKey(f.ctx, "k", "owner-1"); ok {
			t.Fatal("released a key held by another owner")
		}
		if ok, _ := f.s.ReleaseKey(f.ctx, "k", "owner-2"); !ok || f.exists(f.k.IdempotencyKey("k")) {
			t.Fatal("owner could not release its key")
		}
	})
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

func TestRegisterTaskReturnsPrevious(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		old, err := f.s.RegisterTask(f.ctx, "t", []byte(`{"v":1}`), true)
		if err != nil || old != nil {
			t.Fatalf("first registration returned %q, %v", old, err)
		}
		old, _ = f.s.RegisterTask(f.ctx, "t", []byte(`{"v":2}`), false)
		if string(old) != `{"v":1}` {
			t.Fatalf("previous = %q", old)
		}
		if cur, _ := f.s.GetTask(f.ctx, "t"); string(cur) != `{"v":1}` {
			t.Fatalf("keep mode replaced the registration: %q", cur)
		}
		f.s.RegisterTask(f.ctx, "t", []byte(`{"v":3}`), true)
		all, _ := f.s.ListTasks(f.ctx)
		if string(all["t"]) != `{"v":3}` || len(all) != 1 {
			t.Fatalf("registry = %q", all)
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
		if _, err := f.s.Enqueue(f.ctx, &p2); !errors.Is(err, redisstore.ErrRunExists) {
			t.Fatalf("reused run ID: %v, want ErrRunExists", err)
		}
	})
}

// A run's done channel is published when it ends only if it was watched
// first; every run ended is counted on the finished channel, once per call.
func TestDoneChannelIsPublishedForWatchedRunsOnly(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		watched, unwatched, failed := f.params("t", "w", engine.StrategyStatus),
			f.params("t", "u", engine.StrategyStatus), f.params("t", "f", engine.StrategyStatus)
		for _, p := range []*engine.EnqueueParams{watched, unwatched, failed} {
			f.enqueue(p)
		}
		if st, err := f.s.WatchRun(f.ctx, watched.RunID); err != nil || st != "queued" {
			t.Fatalf("watch = %q, %v", st, err)
		}
		chans := []string{f.k.DoneChannel(watched.RunID), f.k.DoneChannel(unwatched.RunID), f.k.FinishedChannel()}
		ps := subscribeNotices(t, f.s, chans...)
		var batch []*engine.FinishParams
		for _, d := range f.read("t", "w1") {
			o := engine.OutcomeSucceeded
			if d.RunID == failed.RunID {
				o = engine.OutcomeFailed
			}
			st := f.start(d, "w1")
			batch = append(batch, &engine.FinishParams{RunID: d.RunID, Attempt: st.Attempt, Outcome: o, Now: f.now,
				Task: d.Task, EntryID: d.EntryID, Spec: st.Spec})
		}
		if _, errs := f.s.FinishBatch(f.ctx, batch); errs[0] != nil || errs[1] != nil || errs[2] != nil {
			t.Fatalf("finish: %v", errs)
		}
		// Messages on one connection arrive in order: a notice for the
		// unwatched run would come before this one.
		publishNotice(t, b, f.k.DoneChannel(unwatched.RunID), "sentinel")
		got := receive(t, ps, len(chans))
		if fmt.Sprint(got[f.k.DoneChannel(watched.RunID)]) != "[succeeded]" ||
			fmt.Sprint(got[f.k.DoneChannel(unwatched.RunID)]) != "[sentinel]" ||
			fmt.Sprint(got[f.k.FinishedChannel()]) != "[failed 1 succeeded 2]" {
			t.Fatalf("notices = %v", got)
		}
		if n := engine.ParseFinished("failed 1 succeeded 2"); n["failed"] != 1 || n["succeeded"] != 2 || len(n) != 2 {
			t.Errorf("ParseFinished = %v", n)
		}
		// An ended run is not watched again, and a missing one is not found.
		if st, err := f.s.WatchRun(f.ctx, unwatched.RunID); err != nil || st != "succeeded" {
			t.Errorf("watch of an ended run = %q, %v", st, err)
		}
		if x := b.Client.HGet(f.ctx, f.k.Run(unwatched.RunID), "x").Val(); x != "" {
			t.Errorf("an ended run was flagged %q", x)
		}
		if _, err := f.s.WatchRun(f.ctx, "no-such-run"); !errors.Is(err, engine.ErrRunNotFound) {
			t.Errorf("watch of a missing run: %v, want ErrRunNotFound", err)
		}
	})
}
