package redisstore_test

import (
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// scheduledParams is a status-strategy trigger of task t with key k that
// asks to run in delay.
func (f *fixture) scheduledParams(key string, strat engine.Strategy, delay time.Duration) *engine.EnqueueParams {
	p := f.params("t", key, strat)
	p.Delay = delay
	p.Hold += delay
	return p
}

// due is the score of run id in the retry zset, the zero time when absent.
func (f *fixture) due(id string) time.Time {
	f.t.Helper()
	v, err := f.b.Client.ZScore(f.ctx, f.k.Retry(), id).Result()
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(int64(v))
}

// A trigger with a delay creates its run queued, with its key claimed, in
// the retry zset and not in its task stream; promote.lua queues it when
// it is due, and a duplicate before then meets it.
func TestScheduledEnqueueWaitsInTheRetrySet(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.scheduledParams("k", engine.StrategyStatus, time.Hour)
		r := f.enqueue(p)
		if !r.Accepted || r.EntryID != "" {
			t.Fatalf("scheduled enqueue = %+v; want accepted with no stream entry", r)
		}
		if got := f.due(p.RunID); got.UnixMilli() != f.now.Add(time.Hour).UnixMilli() {
			t.Fatalf("due = %v, want %v", got, f.now.Add(time.Hour))
		}
		if st := f.status(p.RunID); st != engine.StatusQueued {
			t.Fatalf("status = %q", st)
		}
		if n := f.b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("the task stream holds %d entries before the scheduled run is due", n)
		}
		// The key is claimed now, for the hold from the due time.
		if owner := f.b.Client.Get(f.ctx, f.k.IdempotencyKey("k")).Val(); owner != p.RunID {
			t.Fatalf("key owner = %q, want %s", owner, p.RunID)
		}
		if pttl := f.b.Client.PTTL(f.ctx, f.k.IdempotencyKey("k")).Val(); pttl <= time.Hour {
			t.Fatalf("key pttl = %v; want over the hour to the due time", pttl)
		}
		dup := f.enqueue(f.params("t", "k", engine.StrategyStatus))
		if dup.Accepted || dup.Owner != p.RunID {
			t.Fatalf("duplicate = %+v; want rejected naming %s", dup, p.RunID)
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Minute), 10); err != nil || n != 0 {
			t.Fatalf("promote before due = %d, %v", n, err)
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("promote when due = %d, %v", n, err)
		}
		ds := f.read("t", "w")
		if len(ds) != 1 || ds[0].RunID != p.RunID {
			t.Fatalf("deliveries once due = %+v", ds)
		}
		if st := f.start(ds[0], "w"); st.Attempt != 1 {
			t.Fatalf("start = %+v", st)
		}
	})
}

// In one call, a scheduled trigger and one that runs now each go where
// they should, and a later trigger of the scheduled one's key meets it.
func TestScheduledEnqueueInABatch(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		later := f.scheduledParams("a", engine.StrategyTTL, time.Hour)
		now := f.params("t", "b", engine.StrategyTTL)
		dup := f.params("t", "a", engine.StrategyTTL)
		// A second delay, so that each trigger is seen to read its own.
		soon := f.scheduledParams("c", engine.StrategyTTL, time.Minute)
		rs, errs := f.s.EnqueueBatch(f.ctx, []*engine.EnqueueParams{later, now, dup, soon})
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if !rs[0].Accepted || rs[0].EntryID != "" || !rs[1].Accepted || rs[1].EntryID == "" || !rs[3].Accepted ||
			rs[3].EntryID != "" {
			t.Fatalf("results = %+v", rs)
		}
		if rs[2].Accepted || rs[2].Owner != later.RunID {
			t.Fatalf("duplicate = %+v; want rejected naming %s", rs[2], later.RunID)
		}
		for _, p := range []*engine.EnqueueParams{later, soon} {
			if want := time.UnixMilli(p.Now.Add(p.Delay).UnixMilli()); !f.due(p.RunID).Equal(want) {
				t.Errorf("run %s due %v, want %v (its own delay, %v)", p.RunID, f.due(p.RunID), want, p.Delay)
			}
		}
		if !f.due(now.RunID).IsZero() {
			t.Fatalf("retry zset: unscheduled run due %v", f.due(now.RunID))
		}
		if n := f.b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 1 {
			t.Fatalf("the task stream holds %d entries; want only the unscheduled run's", n)
		}
		if ds := f.read("t", "w"); len(ds) != 1 || ds[0].RunID != now.RunID {
			t.Fatalf("deliveries = %+v; want only %s", ds, now.RunID)
		}
	})
}

// reschedule.lua moves a scheduled run earlier or later, and its key's
// expiry with it, and refuses a run that no longer waits for its time.
func TestRescheduleMovesAScheduledRun(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.scheduledParams("k", engine.StrategyTTL, time.Hour)
		f.enqueue(p)
		key := f.k.IdempotencyKey("k")
		pttl := f.b.Client.PTTL(f.ctx, key).Val()

		later := f.now.Add(3 * time.Hour)
		r, err := f.s.Reschedule(f.ctx, p.RunID, later)
		if err != nil || !r.Moved || r.Previous.UnixMilli() != f.now.Add(time.Hour).UnixMilli() {
			t.Fatalf("reschedule later = %+v, %v", r, err)
		}
		if f.due(p.RunID).UnixMilli() != later.UnixMilli() {
			t.Fatalf("due = %v, want %v", f.due(p.RunID), later)
		}
		// The key's expiry moved by the two hours the run did (less what
		// passed between the reads).
		if got := f.b.Client.PTTL(f.ctx, key).Val(); got < pttl+2*time.Hour-time.Minute || got > pttl+2*time.Hour {
			t.Fatalf("key pttl = %v; want about %v", got, pttl+2*time.Hour)
		}

		earlier := f.now.Add(time.Minute)
		if r, err := f.s.Reschedule(f.ctx, p.RunID, earlier); err != nil || !r.Moved {
			t.Fatalf("reschedule earlier = %+v, %v", r, err)
		}
		// 59 minutes earlier than first scheduled: the key's expiry too.
		if got, want := f.b.Client.PTTL(f.ctx, key).Val(), pttl-59*time.Minute; got > want || got < want-time.Minute {
			t.Fatalf("key pttl = %v; want about %v", got, want)
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(30*time.Second), 10); err != nil || n != 0 {
			t.Fatalf("promote before the new due time = %d, %v", n, err)
		}
		if n, err := f.s.Promote(f.ctx, 0, earlier, 10); err != nil || n != 1 {
			t.Fatalf("promote at the new due time = %d, %v", n, err)
		}
		// Now in its stream: no longer waiting.
		if r, err := f.s.Reschedule(f.ctx, p.RunID, later); err != nil || r.Moved || r.Why != "queued" {
			t.Fatalf("reschedule of a queued run = %+v, %v; want refused: queued", r, err)
		}
		ds := f.read("t", "w")
		f.start(ds[0], "w")
		if r, err := f.s.Reschedule(f.ctx, p.RunID, later); err != nil || r.Moved || r.Why != engine.StatusRunning {
			t.Fatalf("reschedule of a running run = %+v, %v; want refused: running", r, err)
		}
		f.finish(p.RunID, 1, engine.OutcomeSucceeded, `"ok"`)
		if r, err := f.s.Reschedule(f.ctx, p.RunID, later); err != nil || r.Moved || r.Why != engine.StatusSucceeded {
			t.Fatalf("reschedule of an ended run = %+v, %v; want refused: succeeded", r, err)
		}
		if r, err := f.s.Reschedule(f.ctx, "no-such-run", later); err != nil || r.Moved || r.Why != "missing" {
			t.Fatalf("reschedule of a missing run = %+v, %v", r, err)
		}
		if !f.due(p.RunID).IsZero() {
			t.Fatal("a refused reschedule wrote to the retry zset")
		}
	})
}

// A run waiting for a retry or a debounce window is not a scheduled run:
// reschedule.lua leaves it alone.
func TestRescheduleRefusesRetriesAndDebounces(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.running(p, "w")
		if _, err := f.s.Finish(f.ctx, &engine.FinishParams{RunID: p.RunID, Attempt: 1, Outcome: engine.OutcomeRetry,
			Payload: []byte("transient"), Now: f.now, RetryAt: f.now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		retryDue := f.due(p.RunID)
		if r, err := f.s.Reschedule(f.ctx, p.RunID, f.now.Add(time.Minute)); err != nil || r.Moved || r.Why != "retrying" {
			t.Fatalf("reschedule of a retrying run = %+v, %v; want refused: retrying", r, err)
		}
		d := f.params("d", "kd", engine.StrategyDebounce)
		f.enqueue(d)
		debounceDue := f.due(d.RunID)
		if r, err := f.s.Reschedule(f.ctx, d.RunID, f.now.Add(time.Hour)); err != nil || r.Moved || r.Why != "debouncing" {
			t.Fatalf("reschedule of a debounced run = %+v, %v; want refused: debouncing", r, err)
		}
		if !f.due(p.RunID).Equal(retryDue) || !f.due(d.RunID).Equal(debounceDue) {
			t.Fatal("a refused reschedule moved a run")
		}
	})
}

// Cancelling a scheduled run takes it out of the retry zset and releases
// its key: promote.lua never queues it.
func TestCancelOfAScheduledRun(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.scheduledParams("k", engine.StrategyStatus, time.Hour)
		f.enqueue(p)
		if r, err := f.s.Cancel(f.ctx, p.RunID, "not wanted", f.now); err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		if !f.due(p.RunID).IsZero() || f.exists(f.k.IdempotencyKey("k")) {
			t.Fatalf("after cancel: due %v, key held %v", f.due(p.RunID), f.exists(f.k.IdempotencyKey("k")))
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(2*time.Hour), 10); err != nil || n != 0 {
			t.Fatalf("promote after cancel = %d, %v", n, err)
		}
		if st := f.status(p.RunID); st != engine.StatusCancelled {
			t.Fatalf("status = %q", st)
		}
	})
}
