package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// One trigger refused for a wrong-typed key does not stop the others of its
// call, and leaves nothing of itself behind: the runs index it was added to
// before its stream was found wrong is put back.
func TestEnqueueBatchRefusedTriggerLeavesNothingAndStopsNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		b.Client.Set(f.ctx, f.k.Stream("bad"), "x", 0)
		ps := []*engine.EnqueueParams{
			f.params("good", "a", engine.StrategyStatus),
			f.params("bad", "b", engine.StrategyStatus),
			f.params("good", "c", engine.StrategyStatus),
		}
		res, errs := f.s.EnqueueBatch(f.ctx, ps)
		var wt *engine.WrongTypeError
		if !errors.As(errs[1], &wt) || wt.Key != f.k.Stream("bad") || wt.Type != "string" {
			t.Fatalf("trigger on a wrong-typed stream: %v, want a WrongTypeError naming %s", errs[1], f.k.Stream("bad"))
		}
		for _, i := range []int{0, 2} {
			if errs[i] != nil || !res[i].Accepted {
				t.Fatalf("trigger %d = %+v, %v; want accepted", i, res[i], errs[i])
			}
		}
		if f.exists(f.k.Run(ps[1].RunID)) || f.exists(f.k.IdempotencyKey("b")) {
			t.Error("the refused trigger left its record or its key")
		}
		ids := b.Client.ZRange(f.ctx, f.k.Runs(), 0, -1).Val()
		if len(ids) != 2 || ids[0] != ps[0].RunID || ids[1] != ps[2].RunID {
			t.Errorf("runs index = %v, want only %s and %s", ids, ps[0].RunID, ps[2].RunID)
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("good")).Val(); n != 2 {
			t.Errorf("stream of good holds %d entries, want 2", n)
		}
	})
}

// A debounced trigger is scheduled in the retry set; when that set holds
// the wrong type, nothing is written.
func TestEnqueueDebounceOverWrongTypedRetrySetWritesNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		b.Client.Set(f.ctx, f.k.Retry(), "x", 0)
		p := f.params("t", "k", engine.StrategyDebounce)
		_, err := f.s.Enqueue(f.ctx, p)
		if !errors.Is(err, engine.ErrWrongType) {
			t.Fatalf("enqueue = %v, want ErrWrongType", err)
		}
		for _, k := range []string{f.k.Run(p.RunID), f.k.IdempotencyKey("k"), f.k.Runs()} {
			if f.exists(k) {
				t.Errorf("%s was written", k)
			}
		}
	})
}

// One finish call records every outcome as Finish would alone, and leaves
// the streams of the written runs empty and their pending lists clear: a
// stream with a delivery still pending keeps it (and at most the
// acknowledged entries of its head node, see taskq_trim_acked), and holds
// nothing once that one ends too.
func TestFinishBatchRecordsEachOutcomeAndDropsEveryDelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		ps := []*engine.EnqueueParams{
			f.params("a", "1", engine.StrategyStatus), f.params("a", "2", engine.StrategyStatus),
			f.params("b", "3", engine.StrategyStatus), f.params("b", "4", engine.StrategyStatus),
		}
		for _, p := range ps {
			f.enqueue(p)
		}
		var attempts []int
		for _, task := range []string{"a", "b"} {
			for _, d := range f.read(task, "w1") {
				attempts = append(attempts, f.start(d, "w1").Attempt)
			}
		}
		batch := []*engine.FinishParams{
			{RunID: ps[0].RunID, Attempt: attempts[0], Outcome: engine.OutcomeSucceeded, Payload: []byte(`{"ok":1}`), Now: f.now},
			{RunID: ps[1].RunID, Attempt: attempts[1], Outcome: engine.OutcomeFailed, Payload: []byte("boom"), Now: f.now},
			{RunID: ps[2].RunID, Attempt: attempts[2], Outcome: engine.OutcomeRetry, Payload: []byte("again"), Now: f.now, RetryAt: f.now.Add(time.Minute)},
			{RunID: ps[3].RunID, Attempt: attempts[3] + 1, Outcome: engine.OutcomeSucceeded, Now: f.now}, // stale
			{RunID: "no-such-run", Attempt: 1, Outcome: engine.OutcomeSucceeded, Now: f.now},
		}
		res, errs := f.s.FinishBatch(f.ctx, batch)
		want := []engine.FinishResult{
			{Written: true, Status: "succeeded"}, {Written: true, Status: "failed"}, {Written: true, Status: "queued"},
			{Status: "stale"}, {Status: "missing"},
		}
		for i := range want {
			if errs[i] != nil || res[i] != want[i] {
				t.Errorf("outcome %d = %+v, %v; want %+v", i, res[i], errs[i], want[i])
			}
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("a")).Val(); n != 0 {
			t.Errorf("stream a holds %d entries, want none", n)
		}
		// b keeps the stale attempt's delivery, still pending.
		if es := b.Client.XRange(f.ctx, f.k.Stream("b"), "-", "+").Val(); len(es) == 0 || len(es) > 2 ||
			es[len(es)-1].Values["r"] != ps[3].RunID { // "r": the entry's run ID field
			t.Errorf("stream b holds %v, want the unfinished delivery of %s last", es, ps[3].RunID)
		}
		if p := b.Client.XPending(f.ctx, f.k.Stream("b"), redisstore.GroupName).Val(); p.Count != 1 {
			t.Errorf("stream b has %d pending deliveries, want 1", p.Count)
		}
		defer func() {
			// Once the last pending delivery ends, the trim is exact.
			_, errs := f.s.FinishBatch(f.ctx, []*engine.FinishParams{{RunID: ps[3].RunID, Attempt: attempts[3],
				Outcome: engine.OutcomeSucceeded, Now: f.now}})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			if n := b.Client.XLen(f.ctx, f.k.Stream("b")).Val(); n != 0 {
				t.Errorf("stream b holds %d entries once every delivery ended, want none", n)
			}
		}()
		if f.exists(f.k.IdempotencyKey("1")) || f.exists(f.k.IdempotencyKey("2")) || !f.exists(f.k.IdempotencyKey("3")) {
			t.Error("keys: want 1 and 2 released, 3 held through its retry")
		}
		if due := b.Client.ZScore(f.ctx, f.k.Retry(), ps[2].RunID).Val(); int64(due) != f.now.Add(time.Minute).UnixMilli() {
			t.Errorf("retry due %v", due)
		}
		run, _ := f.s.GetRun(f.ctx, ps[0].RunID)
		if string(run.Result) != `{"ok":1}` || run.Finished.UnixMilli() != f.now.UnixMilli() {
			t.Errorf("succeeded run = %+v", run)
		}
	})
}

// A run's signals and steps expire with its record however it ends: its
// finish with the spec its delivery carried (the worker's way), its finish
// read from the record, or a cancel. A run that had none gets no such keys.
func TestSignalsAndStepsExpireWithTheRecord(t *testing.T) {
	endings := map[string]func(f *fixture, d engine.Delivery, st engine.StartResult){
		"finish with spec": func(f *fixture, d engine.Delivery, st engine.StartResult) {
			_, errs := f.s.FinishBatch(f.ctx, []*engine.FinishParams{{RunID: d.RunID, Attempt: st.Attempt,
				Outcome: engine.OutcomeSucceeded, Now: f.now, Task: d.Task, EntryID: d.EntryID, Spec: st.Spec}})
			if errs[0] != nil {
				f.t.Fatal(errs[0])
			}
		},
		"finish from the record": func(f *fixture, d engine.Delivery, st engine.StartResult) {
			f.finish(d.RunID, st.Attempt, engine.OutcomeSucceeded, `{}`)
		},
		"cancel": func(f *fixture, d engine.Delivery, _ engine.StartResult) {
			if r, err := f.s.Cancel(f.ctx, d.RunID, "test", f.now); err != nil || !r.Written {
				f.t.Fatalf("cancel = %+v, %v", r, err)
			}
		},
	}
	for name, end := range endings {
		t.Run(name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				f := newFixture(t, b)
				ps := f.statusRuns("t", "with", "without")
				for _, p := range ps {
					f.enqueue(p)
				}
				ds := f.read("t", "w1")
				sts, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds)
				if errs[0] != nil || errs[1] != nil {
					t.Fatal(errs)
				}
				with := ps[0].RunID
				if r, err := f.s.SignalRun(f.ctx, with, "s1", []byte(`1`), 0); err != nil || !r.Delivered {
					t.Fatalf("signal = %+v, %v", r, err)
				}
				if _, err := f.s.SaveStepResult(f.ctx, with, "step", []byte(`2`)); err != nil {
					t.Fatal(err)
				}
				for i := range ds {
					end(f, ds[i], sts[i])
				}
				for _, k := range []string{f.k.Run(with), f.k.Signals(with), f.k.Steps(with)} {
					if ttl := b.Client.PTTL(f.ctx, k).Val(); ttl <= 0 || ttl > time.Hour {
						t.Errorf("%s: ttl %v, want the record's retention", k, ttl)
					}
				}
				if f.exists(f.k.Signals(ps[1].RunID)) || f.exists(f.k.Steps(ps[1].RunID)) {
					t.Error("a run without signals or steps has such keys")
				}
			})
		})
	}
}

// save_step.lua: the first result of a step wins; a step saved after its
// run ended expires with the record; a run whose record is gone stores
// nothing.
func TestSaveStepResult(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "a", engine.StrategyStatus)
		f.enqueue(p)
		got, err := f.s.SaveStepResult(f.ctx, p.RunID, "s", []byte(`"first"`))
		if err != nil || string(got) != `"first"` {
			t.Fatalf("first save = %s, %v", got, err)
		}
		if got, _ := f.s.SaveStepResult(f.ctx, p.RunID, "s", []byte(`"second"`)); string(got) != `"first"` {
			t.Fatalf("second save returned %s, want the first result", got)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Steps(p.RunID)).Val(); ttl != -1 {
			t.Errorf("steps of an active run: ttl %v, want none", ttl)
		}
		b.Client.PExpire(f.ctx, f.k.Run(p.RunID), time.Minute) // as when the run ends
		if _, err := f.s.SaveStepResult(f.ctx, p.RunID, "late", []byte(`3`)); err != nil {
			t.Fatal(err)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Steps(p.RunID)).Val(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("steps saved after the end: ttl %v, want the record's", ttl)
		}
		got, err = f.s.SaveStepResult(f.ctx, "gone", "s", []byte(`4`))
		if err != nil || string(got) != `4` || f.exists(f.k.Steps("gone")) || f.exists(f.k.Run("gone")) {
			t.Errorf("save for a missing run = %s, %v; want its own result and nothing stored", got, err)
		}
	})
}

// scriptCalls counts the script calls a client makes that ran, alone or
// in a pipeline (an EVALSHA answered NOSCRIPT, and then sent again as
// EVAL, counts once, as does an FCALL answered "Function not found" and
// sent again once its library is loaded).
type scriptCalls struct{ n atomic.Int64 }

func (c *scriptCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *scriptCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if redistest.IsScriptCall(strings.ToLower(cmd.Name())) && redistest.ScriptRan(err) {
			c.n.Add(1)
		}
		return err
	}
}
func (c *scriptCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if redistest.IsScriptCall(strings.ToLower(cmd.Name())) && redistest.ScriptRan(cmd.Err()) {
				c.n.Add(1)
			}
		}
		return err
	}
}

// A batch larger than MaxItemsPerCall goes out in several script calls,
// which Redis runs one after another, and still behaves as one ordered batch: a trigger collides
// with an earlier one of its key that an earlier call carried.
func TestEnqueueBatchPastTheCallLimitIsSplitInOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		rdb := b.NewClient(t)
		calls := &scriptCalls{}
		rdb.AddHook(calls)
		f := newFixture(t, b)
		f.s = redisstore.New(rdb, b.Namespace)
		n := 2*redisstore.MaxItemsPerCall + 10
		ps := make([]*engine.EnqueueParams, n)
		for i := range ps {
			ps[i] = f.params("t", fmt.Sprint("k", i), engine.StrategyStatus)
		}
		last := n - 1
		ps[last] = f.params("t", "k0", engine.StrategyStatus) // collides with the first
		res, errs := f.s.EnqueueBatch(f.ctx, ps)
		for i := 0; i < last; i++ {
			if errs[i] != nil || !res[i].Accepted {
				t.Fatalf("trigger %d = %+v, %v", i, res[i], errs[i])
			}
		}
		if res[last].Accepted || res[last].Owner != ps[0].RunID {
			t.Fatalf("last trigger = %+v, want a collision with %s", res[last], ps[0].RunID)
		}
		if got := calls.n.Load(); got != 3 {
			t.Fatalf("%d triggers went out in %d script calls, want 3", n, got)
		}
	})
}

// One outcome whose run key holds the wrong type fails alone; the other
// outcomes of its call are recorded.
func TestFinishBatchErrorsStayWithTheirOutcome(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		good := f.params("t", "a", engine.StrategyStatus)
		st := f.running(good, "w1")
		b.Client.Set(f.ctx, f.k.Run("broken"), "not a hash", 0)
		res, errs := f.s.FinishBatch(f.ctx, []*engine.FinishParams{
			{RunID: "broken", Attempt: 1, Outcome: engine.OutcomeSucceeded, Now: f.now},
			{RunID: good.RunID, Attempt: st.Attempt, Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: f.now},
		})
		var wt *engine.WrongTypeError
		if !errors.As(errs[0], &wt) || wt.Key != f.k.Run("broken") {
			t.Fatalf("outcome of the wrong-typed run: %v, want a WrongTypeError naming its key", errs[0])
		}
		if errs[1] != nil || !res[1].Written || res[1].Status != "succeeded" {
			t.Fatalf("the other outcome = %+v, %v; want it recorded", res[1], errs[1])
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("stream holds %d entries, want the finished run's trimmed", n)
		}
	})
}

// finish trims a stream's acknowledged head, and no further: entries
// acknowledged behind an older delivery still pending stay until it is
// acknowledged too, and an entry not yet read is never trimmed.
func TestFinishTrimsOnlyTheAcknowledgedHead(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		ps := f.statusRuns("t", "1", "2", "3")
		for _, p := range ps {
			f.enqueue(p)
		}
		ds := f.read("t", "w1")
		var attempts []int
		for _, d := range ds {
			attempts = append(attempts, f.start(d, "w1").Attempt)
		}
		unread := f.params("t", "4", engine.StrategyStatus)
		f.enqueue(unread)
		entries := func() []string {
			var ids []string
			for _, m := range b.Client.XRange(f.ctx, f.k.Stream("t"), "-", "+").Val() {
				ids = append(ids, m.ID)
			}
			return ids
		}

		// The second and third finish while the first is still running.
		for _, i := range []int{1, 2} {
			f.finish(ps[i].RunID, attempts[i], engine.OutcomeSucceeded, `{}`)
		}
		if got := entries(); len(got) != 4 {
			t.Fatalf("stream = %v, want all 4 entries while the oldest delivery is pending", got)
		}
		f.finish(ps[0].RunID, attempts[0], engine.OutcomeSucceeded, `{}`)
		if got := entries(); len(got) != 1 {
			t.Fatalf("stream = %v, want only the unread entry", got)
		}
		if m := b.Client.XRange(f.ctx, f.k.Stream("t"), "-", "+").Val(); m[0].Values["r"] != unread.RunID {
			t.Errorf("the entry left is %v, want the unread run %s", m[0].Values, unread.RunID)
		}
		if p := b.Client.XPending(f.ctx, f.k.Stream("t"), redisstore.GroupName).Val(); p.Count != 0 {
			t.Errorf("%d deliveries still pending, want none", p.Count)
		}
	})
}

// One finish call releases its runs' keys together, each only while its
// run still owns it, and keeps a retained key for its retain time.
// A call's runs are all in the runs index, each at its own creation time,
// and nothing else is: not a trigger refused for a wrong-typed key (first
// in the call, so that a later run writes the index first), a duplicate,
// a resend of a trigger of the same call, or a run that was scheduled.
// The index is written by the first run created and once more at the end
// for the others.
func TestEnqueueBatchIndexesEveryRunItCreates(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		b.Client.Set(f.ctx, f.k.Stream("bad"), "x", 0)
		refused := f.params("bad", "r", engine.StrategyStatus)
		first, second := f.params("a", "1", engine.StrategyStatus), f.params("b", "2", engine.StrategyTTL)
		dup := f.params("a", "1", engine.StrategyStatus)
		none := f.params("a", "", engine.StrategyNone)
		later := f.scheduledParams("3", engine.StrategyTTL, time.Hour)
		// Each run its own creation time, so that a score read off another
		// run's arguments shows.
		for i, p := range []*engine.EnqueueParams{refused, first, second, dup, none, later} {
			p.Now = f.now.Add(time.Duration(i) * time.Second)
		}
		resend := *first
		batch := []*engine.EnqueueParams{refused, first, second, dup, &resend, none, later}
		rs, errs := f.s.EnqueueBatch(f.ctx, batch)
		if !errors.Is(errs[0], engine.ErrWrongType) {
			t.Fatalf("trigger over a wrong-typed stream: %+v, %v; want ErrWrongType", rs[0], errs[0])
		}
		for _, i := range []int{1, 2, 4, 5, 6} {
			if errs[i] != nil || !rs[i].Accepted {
				t.Fatalf("trigger %d = %+v, %v; want accepted", i, rs[i], errs[i])
			}
		}
		if errs[3] != nil || rs[3].Accepted || rs[3].Owner != first.RunID {
			t.Fatalf("duplicate = %+v, %v; want rejected naming %s", rs[3], errs[3], first.RunID)
		}
		if rs[4].EntryID != rs[1].EntryID {
			t.Errorf("resend answered entry %q, want the first send's %q", rs[4].EntryID, rs[1].EntryID)
		}
		got := b.Client.ZRangeWithScores(f.ctx, f.k.Runs(), 0, -1).Val()
		want := []redis.Z{}
		for _, p := range []*engine.EnqueueParams{first, second, none, later} {
			want = append(want, redis.Z{Score: float64(p.Now.UnixMilli()), Member: p.RunID})
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("runs index = %v, want %v", got, want)
		}
	})
}

// A call of triggers of several tasks, in turn and back again, queues each
// run in its own task's stream, and only there.
func TestEnqueueBatchQueuesEachRunInItsTasksStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		tasks := []string{"a", "a", "b", "a", "c", "c", "b"}
		batch := make([]*engine.EnqueueParams, len(tasks))
		want := map[string][]string{}
		for i, task := range tasks {
			batch[i] = f.params(task, fmt.Sprintf("k%d", i), engine.StrategyTTL)
			want[task] = append(want[task], batch[i].RunID)
		}
		rs, errs := f.s.EnqueueBatch(f.ctx, batch)
		for i := range batch {
			if errs[i] != nil || !rs[i].Accepted {
				t.Fatalf("trigger %d = %+v, %v; want accepted", i, rs[i], errs[i])
			}
		}
		for task, ids := range want {
			var got []string
			for _, m := range b.Client.XRange(f.ctx, f.k.Stream(task), "-", "+").Val() {
				got = append(got, fmt.Sprint(m.Values["r"]))
			}
			if !slices.Equal(got, ids) {
				t.Errorf("stream of task %s holds %v, want %v", task, got, ids)
			}
		}
	})
}

func TestFinishBatchReleasesOnlyKeysItsRunsOwn(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		// In this order, so that the keys released are not one run of
		// the call's: one before the lapsed key, one after it.
		owned, lapsed, owned2, retained := f.params("t", "owned", engine.StrategyStatus),
			f.params("t", "lapsed", engine.StrategyStatus), f.params("t", "owned2", engine.StrategyStatus),
			f.params("t", "retained", engine.StrategyStatus)
		retained.Retain = time.Hour
		for _, p := range []*engine.EnqueueParams{owned, lapsed, owned2, retained} {
			f.enqueue(p)
		}
		var batch []*engine.FinishParams
		for _, d := range f.read("t", "w1") {
			batch = append(batch, &engine.FinishParams{
				RunID: d.RunID, Attempt: f.start(d, "w1").Attempt, Outcome: engine.OutcomeSucceeded, Now: f.now,
			})
		}
		// lapsed's key expired while it ran and another run claimed it.
		b.Client.Set(f.ctx, f.k.IdempotencyKey("lapsed"), "newer-run", 0)

		res, errs := f.s.FinishBatch(f.ctx, batch)
		for i := range res {
			if errs[i] != nil || !res[i].Written {
				t.Fatalf("finish %d = %+v, %v", i, res[i], errs[i])
			}
		}
		if v := b.Client.Get(f.ctx, f.k.IdempotencyKey("lapsed")).Val(); v != "newer-run" {
			t.Errorf("the newer owner's key holds %q, want it kept", v)
		}
		if f.exists(f.k.IdempotencyKey("owned")) || f.exists(f.k.IdempotencyKey("owned2")) {
			t.Error("an owned key was not released")
		}
		ttl := b.Client.PTTL(f.ctx, f.k.IdempotencyKey("retained")).Val()
		if v := b.Client.Get(f.ctx, f.k.IdempotencyKey("retained")).Val(); v != retained.RunID || ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("the retained key holds %q with ttl %v, want its run for an hour", v, ttl)
		}
	})
}

// A start call's replies stay with their deliveries whatever each one is
// answered: started with or without a spec (a longer reply), refused, or
// an error for a wrong-typed run key.
func TestStartBatchRepliesStayWithTheirDeliveries(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		ps := f.statusRuns("t", "1", "2", "3", "4", "5")
		for i, p := range ps {
			p.Input = []byte(fmt.Sprintf(`{"n":%d}`, i))
			f.enqueue(p)
		}
		ds := f.read("t", "w1")
		ds[0].Spec, ds[3].Spec = nil, nil // answered with the record's values
		b.Client.Del(f.ctx, f.k.Run(ps[1].RunID))
		b.Client.Del(f.ctx, f.k.Run(ps[2].RunID))
		b.Client.Set(f.ctx, f.k.Run(ps[2].RunID), "x", 0)
		res, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds)
		for _, i := range []int{0, 3, 4} {
			if errs[i] != nil || !res[i].Started || res[i].Attempt != 1 || string(res[i].Spec.Input) != fmt.Sprintf(`{"n":%d}`, i) ||
				res[i].Spec.Key != ps[i].Key {
				t.Errorf("delivery %d: %+v, %v; want started with its own input and key", i, res[i], errs[i])
			}
		}
		if errs[1] != nil || res[1].Started || res[1].Reason != "missing" {
			t.Errorf("delivery of a deleted run: %+v, %v; want not started, missing", res[1], errs[1])
		}
		if !errors.Is(errs[2], engine.ErrWrongType) {
			t.Errorf("delivery of a wrong-typed run key: %v, want ErrWrongType", errs[2])
		}
	})
}

// A long-running delivery holds back the trimming of entries acknowledged
// after it, but no more than MaxLingeringEntries of them: past that,
// finishing deletes the finished runs' entries at once. Real Redis only:
// the bound relies on a consumer group's lag, which miniredis reports as
// the stream's length.
func TestFinishBoundsEntriesLingeringBehindALongRun(t *testing.T) {
	src, err := redisstore.ScriptSource("finish")
	// The bound is MAX_LINGERING_ENTRIES in the layout.
	if err != nil || !strings.Contains(src, fmt.Sprintf("local MAX_LINGERING_ENTRIES = %d", redisstore.MaxLingeringEntries)) {
		t.Fatalf("the scripts' bound is not MaxLingeringEntries (%d)", redisstore.MaxLingeringEntries)
	}
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		long := f.params("t", "long", engine.StrategyStatus)
		f.running(long, "w1") // runs on, pending, oldest
		stream := f.k.Stream("t")
		// Acknowledged entries behind it, one short of the bound.
		pipe := b.Client.Pipeline()
		for i := 0; i < redisstore.MaxLingeringEntries-1; i++ {
			pipe.XAdd(f.ctx, &redis.XAddArgs{Stream: stream, Values: []any{"r", "done"}})
		}
		if _, err := pipe.Exec(f.ctx); err != nil {
			t.Fatal(err)
		}
		read, err := b.Client.XReadGroup(f.ctx, &redis.XReadGroupArgs{Group: redisstore.GroupName, Consumer: "w1",
			Streams: []string{stream, ">"}, Count: int64(redisstore.MaxLingeringEntries)}).Result()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range read[0].Messages {
			ids = append(ids, m.ID)
		}
		b.Client.XAck(f.ctx, stream, redisstore.GroupName, ids...)

		finishOne := func(key string) {
			t.Helper()
			p := f.params("t", key, engine.StrategyStatus)
			f.enqueue(p)
			d := f.read("t", "w1")[0]
			st, errs := f.s.StartBatch(f.ctx, "w1", f.now, []engine.Delivery{d})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			_, ferrs := f.s.FinishBatch(f.ctx, []*engine.FinishParams{{RunID: p.RunID, Attempt: st[0].Attempt,
				Outcome: engine.OutcomeSucceeded, Now: f.now, Task: d.Task, EntryID: d.EntryID, Spec: st[0].Spec}})
			if ferrs[0] != nil {
				t.Fatal(ferrs[0])
			}
		}
		// Up to the bound, a finished run's entry lingers too.
		finishOne("a")
		if n := b.Client.XLen(f.ctx, stream).Val(); n != int64(redisstore.MaxLingeringEntries)+1 {
			t.Fatalf("stream holds %d entries, want the long run's and %d acknowledged", n, redisstore.MaxLingeringEntries)
		}
		// Past it, a finished run's entry is deleted at once.
		finishOne("b")
		if n := b.Client.XLen(f.ctx, stream).Val(); n != int64(redisstore.MaxLingeringEntries)+1 {
			t.Fatalf("stream holds %d entries after one more finished, want no more", n)
		}
		// Once the long run ends, the whole acknowledged head goes.
		f.finish(long.RunID, 1, engine.OutcomeSucceeded, `{}`)
		if n := b.Client.XLen(f.ctx, stream).Val(); n != 0 {
			t.Fatalf("stream holds %d entries after the long run ended, want none", n)
		}
	})
}

// Outcomes recorded one per call, oldest first, while later deliveries are
// still pending, the deliveries spread over ten workers: the stream's
// acknowledged head goes by whole nodes, so it
// keeps at most one node of acknowledged entries (100 by Redis's default
// stream-node-max-entries) beside the pending ones, and nothing once the
// last delivery ends.
func TestFinishTrimsTheAcknowledgedHeadWhileDeliveriesArePending(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		const n, ended = 300, 250
		ps := make([]*engine.EnqueueParams, n)
		for i := range ps {
			ps[i] = f.params("t", "", engine.StrategyNone)
		}
		if _, errs := f.s.EnqueueBatch(f.ctx, ps); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if err := f.s.EnsureGroup(f.ctx, "t"); err != nil {
			t.Fatal(err)
		}
		// Ten workers, each holding 30 deliveries.
		var ds []engine.Delivery
		consumer := map[string]string{}
		for w := range 10 {
			name := fmt.Sprint("w", w)
			got, err := f.s.ReadGroup(f.ctx, 0, name, []string{"t"}, n/10, 0)
			if err != nil || len(got) != n/10 {
				t.Fatalf("worker %s read %d deliveries, %v; want %d", name, len(got), err, n/10)
			}
			for _, d := range got {
				consumer[d.RunID] = name
			}
			ds = append(ds, got...)
		}
		finish := func(d engine.Delivery) {
			t.Helper()
			res, errs := f.s.FinishBatch(f.ctx, []*engine.FinishParams{{RunID: d.RunID, Attempt: d.Spec.Attempts + 1,
				Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: f.now, Task: d.Task, EntryID: d.EntryID,
				Spec: d.Spec, Began: f.now, Consumer: consumer[d.RunID]}})
			if errs[0] != nil || !res[0].Written {
				t.Fatalf("finish %s: %+v, %v", d.RunID, res[0], errs[0])
			}
		}
		for _, d := range ds[:ended] {
			finish(d)
		}
		stream := f.k.Stream("t")
		if l := b.Client.XLen(f.ctx, stream).Val(); l < n-ended || l > n-ended+100 {
			t.Errorf("stream holds %d entries with %d pending, want those and at most one node (100) of acknowledged ones", l, n-ended)
		}
		for _, d := range ds[ended:] {
			finish(d)
		}
		if l := b.Client.XLen(f.ctx, stream).Val(); l != 0 {
			t.Errorf("stream holds %d entries once every delivery ended, want none", l)
		}
	})
}
