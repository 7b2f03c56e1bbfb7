package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// began returns the finish of delivery d's next attempt that also begins
// it, as a worker sends it when the handler returned before the attempt
// was begun.
func began(d engine.Delivery, o engine.Outcome, payload string, at, now time.Time) *engine.FinishParams {
	return &engine.FinishParams{
		RunID: d.RunID, Attempt: d.Spec.Attempts + 1, Outcome: o, Payload: []byte(payload), Now: now,
		RetryAt: now.Add(time.Minute), Task: d.Task, EntryID: d.EntryID, Spec: d.Spec, Began: at, Consumer: "w1",
	}
}

// A finish that begins its attempt leaves Redis exactly as a start at the
// same time followed by the finish does: the same records (attempt,
// started, consumer, outcome), keys, key and record lifetimes, stream,
// pending list and retry set, for every outcome and strategy, and for a
// retried run's second attempt.
func TestFinishThatBeginsWritesWhatStartThenFinishWrite(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		type state struct {
			held
			replies []string
		}
		outcomes := map[string]engine.Outcome{
			"ok": engine.OutcomeSucceeded, "retained": engine.OutcomeSucceeded, "failed": engine.OutcomeFailed,
			"retry": engine.OutcomeRetry, "plain": engine.OutcomeSucceeded, "ttl": engine.OutcomeSucceeded,
			"second": engine.OutcomeSucceeded,
		}
		run := func(ns string, begin bool) state {
			// One partition, the cluster's too: the streams and keys
			// compared are the home partition's.
			s := redisstore.NewPartitioned(b.Client, ns, 1)
			t.Cleanup(func() { redistest.DeleteNamespace(context.Background(), b.Client, ns) })
			k := s.Keys()
			now := time.UnixMilli(1_700_000_000_000)
			at := now.Add(-5 * time.Millisecond)
			mk := func(id, key string, strat engine.Strategy, retain time.Duration) *engine.EnqueueParams {
				return &engine.EnqueueParams{RunID: id, Task: "t", Input: []byte(`{"id":"` + id + `"}`), Meta: []byte(`{}`),
					Key: key, Strategy: strat, Hold: time.Hour, Retain: retain, Retries: 1, MaxDeliveries: 5,
					Retention: time.Hour, Now: now}
			}
			ps := []*engine.EnqueueParams{
				mk("ok", "k-ok", engine.StrategyStatus, 0), mk("retained", "k-ret", engine.StrategyStatus, time.Minute),
				mk("failed", "k-fail", engine.StrategyStatus, 0), mk("retry", "k-retry", engine.StrategyStatus, 0),
				mk("plain", "", engine.StrategyNone, 0), mk("ttl", "k-ttl", engine.StrategyTTL, 0),
				mk("second", "k-second", engine.StrategyStatus, 0),
			}
			if _, errs := s.EnqueueBatch(ctx, ps); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if err := s.EnsureGroup(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			var st state
			// "second" fails its first attempt (begun by start.lua in both
			// runs) and is queued again, as is "retry" after its first, so
			// their second deliveries say one attempt was begun before.
			end := func(ds []engine.Delivery) {
				var fps []*engine.FinishParams
				if begin {
					for _, d := range ds {
						fps = append(fps, began(d, outcomes[d.RunID], `{"r":1}`, at, now))
					}
				} else {
					sts, errs := s.StartBatch(ctx, "w1", at, ds)
					for i, d := range ds {
						if errs[i] != nil || !sts[i].Started {
							t.Fatalf("start %s = %+v, %v", d.RunID, sts[i], errs[i])
						}
						fps = append(fps, &engine.FinishParams{RunID: d.RunID, Attempt: sts[i].Attempt, Outcome: outcomes[d.RunID],
							Payload: []byte(`{"r":1}`), Now: now, RetryAt: now.Add(time.Minute), Task: d.Task, EntryID: d.EntryID, Spec: sts[i].Spec})
					}
				}
				frs, ferrs := s.FinishBatch(ctx, fps)
				for i := range frs {
					st.replies = append(st.replies, fmt.Sprint(fps[i].RunID, frs[i], ferrs[i]))
				}
			}
			ds, err := s.ReadGroup(ctx, 0, "w1", []string{"t"}, 100, -1)
			if err != nil || len(ds) != len(ps) {
				t.Fatalf("read %d deliveries, %v", len(ds), err)
			}
			var first []engine.Delivery
			for _, d := range ds {
				if d.RunID == "second" {
					sts, errs := s.StartBatch(ctx, "w1", at, []engine.Delivery{d})
					if errs[0] != nil || !sts[0].Started {
						t.Fatalf("start second = %+v, %v", sts[0], errs[0])
					}
					fr, err := s.Finish(ctx, &engine.FinishParams{RunID: d.RunID, Attempt: sts[0].Attempt, Outcome: engine.OutcomeRetry,
						Payload: []byte("again"), Now: now, RetryAt: now, Task: d.Task, EntryID: d.EntryID, Spec: sts[0].Spec})
					if err != nil || !fr.Written {
						t.Fatalf("retry second = %+v, %v", fr, err)
					}
					continue
				}
				first = append(first, d)
			}
			end(first)
			// "second" and "retry" are due again.
			if n, err := s.Promote(ctx, 0, now.Add(time.Hour), 10); err != nil || n != 2 {
				t.Fatalf("promote = %d, %v", n, err)
			}
			again, err := s.ReadGroup(ctx, 0, "w1", []string{"t"}, 100, -1)
			if err != nil || len(again) != 2 {
				t.Fatalf("second deliveries = %+v, %v", again, err)
			}
			for _, d := range again {
				if d.Spec == nil || d.Spec.Attempts != 1 {
					t.Fatalf("second delivery of %s says %+v; want one attempt begun", d.RunID, d.Spec)
				}
			}
			end(again)
			st.held = heldBy(ctx, b, k, "t", ps)
			return st
		}
		two, one := run(b.Namespace+"-two", false), run(b.Namespace+"-one", true)
		if fmt.Sprint(two.replies) != fmt.Sprint(one.replies) {
			t.Errorf("replies differ:\nstart, finish %v\nbegun at end  %v", two.replies, one.replies)
		}
		for id, rec := range two.records {
			if !maps.Equal(rec, one.records[id]) {
				t.Errorf("record %s differs:\nstart, finish %v\nbegun at end  %v", id, rec, one.records[id])
			}
		}
		if fmt.Sprint(two.keys, two.ttls) != fmt.Sprint(one.keys, one.ttls) {
			t.Errorf("keys differ:\nstart, finish %v %v\nbegun at end  %v %v", two.keys, two.ttls, one.keys, one.ttls)
		}
		if fmt.Sprint(two.stream, two.pending, two.retry) != fmt.Sprint(one.stream, one.pending, one.retry) {
			t.Errorf("streams differ:\nstart, finish %v %d %v\nbegun at end  %v %d %v", two.stream, two.pending, two.retry, one.stream, one.pending, one.retry)
		}
		// The scenario reaches what it claims to compare.
		want := map[string]string{"ok": "succeeded", "retained": "succeeded", "failed": "failed", "retry": "queued",
			"plain": "succeeded", "ttl": "succeeded", "second": "succeeded"}
		s := redisstore.New(b.Client, b.Namespace+"-one")
		for id, status := range want {
			r, err := s.GetRun(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			attempts := 1
			if id == "second" || id == "retry" {
				attempts = 2
			}
			if r.Status != status || r.Attempt != attempts || r.Consumer != "w1" || r.Started.IsZero() {
				t.Errorf("run %s = %s, attempt %d, consumer %q, started %v; want %s after attempt %d by w1",
					id, r.Status, r.Attempt, r.Consumer, r.Started, status, attempts)
			}
		}
		if one.keys["k-ok"]["owner"] != "" || one.keys["k-ret"]["owner"] != "retained" || one.keys["k-retry"]["owner"] != "retry" {
			t.Errorf("keys = %v: want k-ok released, k-ret retained, k-retry held through the retry", one.keys)
		}
	})
}

// A finish that would begin its attempt writes nothing when the run moved
// on since the delivery's entry was written, and says why: it was
// cancelled, another worker began it, it was queued again with another
// entry, or its record is gone. The worker's handler ran, but its outcome
// is not recorded and the key stays with whoever owns the run now.
func TestFinishThatBeginsIsRefusedOnceTheRunMovedOn(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		deliver := func(key string) (*engine.EnqueueParams, engine.Delivery) {
			p := f.params("t", key, engine.StrategyStatus)
			f.enqueue(p)
			ds := f.read("t", "w1")
			if len(ds) != 1 || ds[0].Spec == nil {
				t.Fatalf("deliveries %+v, want one with a spec", ds)
			}
			return p, ds[0]
		}
		refused := func(name string, d engine.Delivery, want string) {
			t.Helper()
			before := b.Client.HGetAll(f.ctx, f.k.Run(d.RunID)).Val()
			r, err := f.s.Finish(f.ctx, began(d, engine.OutcomeSucceeded, `{}`, f.now, f.now))
			if err != nil || r.Written || r.Status != want {
				t.Fatalf("%s: finish = %+v, %v; want nothing written, reason %q", name, r, err, want)
			}
			if after := b.Client.HGetAll(f.ctx, f.k.Run(d.RunID)).Val(); !maps.Equal(before, after) {
				t.Fatalf("%s: record changed from %v to %v", name, before, after)
			}
		}

		p, d := deliver("k-cancelled")
		if r, err := f.s.Cancel(f.ctx, p.RunID, "by test", f.now); err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		refused("cancelled", d, "cancelled")

		// Another worker reclaimed the delivery and began it: that attempt
		// owns the run, and its key.
		p, d = deliver("k-taken")
		again, err := f.s.AutoClaim(f.ctx, 0, "t", "w2", 0, 10)
		if err != nil || len(again) != 1 {
			t.Fatalf("reclaim = %+v, %v", again, err)
		}
		if st, errs := f.s.StartBatch(f.ctx, "w2", f.now, again); errs[0] != nil || !st[0].Started || st[0].Attempt != 2 {
			t.Fatalf("start of the reclaimed delivery = %+v, %v; want attempt 2 (the first delivery counts)", st[0], errs[0])
		}
		refused("begun elsewhere", d, "stale")
		if owner := b.Client.Get(f.ctx, f.k.IdempotencyKey("k-taken")).Val(); owner != p.RunID {
			t.Fatalf("key owner = %q, want %s", owner, p.RunID)
		}

		// Given back by a worker shutting down: queued again, another entry.
		p, d = deliver("k-requeued")
		st := f.start(d, "w1")
		if r, err := f.s.Requeue(f.ctx, p.RunID, "t", st.Attempt); err != nil || !r.Written {
			t.Fatalf("requeue = %+v, %v", r, err)
		}
		refused("queued again", d, "stale")
		next := f.read("t", "w1")
		if len(next) != 1 || next[0].Spec.Attempts != 1 {
			t.Fatalf("new delivery %+v, want one that says an attempt was begun", next)
		}
		if r, err := f.s.Finish(f.ctx, began(next[0], engine.OutcomeSucceeded, `{}`, f.now, f.now)); err != nil || !r.Written {
			t.Fatalf("finish of the new delivery = %+v, %v", r, err)
		}

		_, d = deliver("k-gone")
		b.Client.Del(f.ctx, f.k.Run(d.RunID))
		refused("record gone", d, "missing")
	})
}

// One finish call names one worker for the attempts it begins, so a batch
// of outcomes begun by two workers is sent as a call per worker, the
// outcomes that begin nothing going with the first: each record names the
// worker that ran its attempt, an outcome of an attempt start.lua began
// keeps the worker start recorded, and an outcome that is none of the
// three is refused by name while the others are written. A batch of one
// worker's outcomes, begun there or not, is one call.
func TestFinishBatchRecordsEachAttemptsOwnWorker(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		log := &callLog{}
		b.Client.AddHook(log)
		calls := func() int {
			log.mu.Lock()
			defer log.mu.Unlock()
			return len(log.calls)
		}
		f := newFixture(t, b)
		ps := []*engine.EnqueueParams{f.params("t", "k1", engine.StrategyStatus),
			f.params("t", "k2", engine.StrategyStatus), f.params("t", "k3", engine.StrategyStatus),
			f.params("t", "k4", engine.StrategyStatus), f.params("t", "k5", engine.StrategyStatus)}
		for _, p := range ps {
			f.enqueue(p)
		}
		ds := f.read("t", "w")
		if len(ds) != len(ps) {
			t.Fatalf("read %d deliveries, want %d", len(ds), len(ps))
		}
		started := f.start(ds[2], "w-started")
		if !started.Started {
			t.Fatalf("start: %+v", started)
		}
		at := f.now.Add(-time.Millisecond)
		fps := []*engine.FinishParams{
			began(ds[0], engine.OutcomeSucceeded, `{}`, at, f.now),
			began(ds[1], engine.OutcomeSucceeded, `{}`, at, f.now),
			{RunID: ds[2].RunID, Attempt: started.Attempt, Outcome: engine.OutcomeFailed, Payload: []byte("boom"),
				Now: f.now, Task: ds[2].Task, EntryID: ds[2].EntryID, Spec: ds[2].Spec},
			began(ds[3], engine.OutcomeRetry, "again", at, f.now),
			began(ds[4], "skipped", `{}`, at, f.now),
		}
		fps[1].Consumer, fps[3].Consumer = "w2", "w2"
		// The server loads the script at its first call, which the call
		// then sends again: a finish of a missing run first, not counted.
		if r, err := f.s.Finish(f.ctx, &engine.FinishParams{RunID: "missing", Attempt: 1,
			Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: f.now}); err != nil || r.Status != "missing" {
			t.Fatalf("finish of a missing run: %+v, %v", r, err)
		}
		before := calls()
		res, errs := f.s.FinishBatch(f.ctx, fps)
		if n := calls() - before; n != 2 {
			t.Errorf("a batch of two workers' outcomes made %d finish calls, want 2", n)
		}
		for i := range 4 {
			if errs[i] != nil || !res[i].Written {
				t.Fatalf("finish %s: %+v, %v", fps[i].RunID, res[i], errs[i])
			}
		}
		if errs[4] == nil || !strings.Contains(errs[4].Error(), `"skipped"`) {
			t.Fatalf("finish with outcome skipped: %v, want an error naming it", errs[4])
		}
		for i, want := range []string{"w1", "w2", "w-started", "w2", ""} {
			if got := f.b.Client.HGet(f.ctx, f.k.Run(ds[i].RunID), "consumer").Val(); got != want {
				t.Errorf("run %s: consumer %q, want %q", ds[i].RunID, got, want)
			}
		}
		for i, want := range []string{"succeeded", "succeeded", "failed", "queued", "queued"} {
			if got := f.status(ds[i].RunID); got != want {
				t.Errorf("run %s: status %q, want %q", ds[i].RunID, got, want)
			}
		}
		if due := f.b.Client.ZScore(f.ctx, f.k.Retry(), ds[3].RunID).Val(); int64(due) != fps[3].RetryAt.UnixMilli() {
			t.Errorf("retry due at %d, want %d", int64(due), fps[3].RetryAt.UnixMilli())
		}
		// The keys of the ended runs are free, those of the retried and
		// the refused one still held.
		for i, want := range []bool{false, false, false, true, true} {
			if got := f.exists(f.k.IdempotencyKey(ps[i].Key)); got != want {
				t.Errorf("key %s held: %v, want %v", ps[i].Key, got, want)
			}
		}

		// One worker's outcomes, one begun in the call and one begun by
		// start.lua, are one call.
		more := []*engine.EnqueueParams{f.params("t", "k6", engine.StrategyStatus),
			f.params("t", "k7", engine.StrategyStatus)}
		for _, p := range more {
			f.enqueue(p)
		}
		ds = f.read("t", "w")
		if len(ds) != 2 {
			t.Fatalf("read %d deliveries, want 2", len(ds))
		}
		started = f.start(ds[1], "w1")
		before = calls()
		res, errs = f.s.FinishBatch(f.ctx, []*engine.FinishParams{
			began(ds[0], engine.OutcomeSucceeded, `{}`, at, f.now),
			{RunID: ds[1].RunID, Attempt: started.Attempt, Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`),
				Now: f.now, Task: ds[1].Task, EntryID: ds[1].EntryID, Spec: ds[1].Spec},
		})
		if n := calls() - before; n != 1 {
			t.Errorf("a batch of one worker's outcomes made %d finish calls, want 1", n)
		}
		for i := range res {
			if errs[i] != nil || !res[i].Written {
				t.Fatalf("finish %s: %+v, %v", ds[i].RunID, res[i], errs[i])
			}
			if got := f.b.Client.HGet(f.ctx, f.k.Run(ds[i].RunID), "consumer").Val(); got != "w1" {
				t.Errorf("run %s: consumer %q, want w1", ds[i].RunID, got)
			}
		}
	})
}
