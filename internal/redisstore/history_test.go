package redisstore_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// startOne starts the only delivery of the run's task for consumer at now
// and returns its attempt.
func (f *fixture) startOne(task, consumer string, ds []engine.Delivery, now time.Time) int {
	f.t.Helper()
	if len(ds) != 1 {
		f.t.Fatalf("%d deliveries of %s, want 1", len(ds), task)
	}
	sts, errs := f.s.StartBatch(f.ctx, consumer, now, ds)
	if errs[0] != nil || !sts[0].Started {
		f.t.Fatalf("start for %s = %+v, %v", consumer, sts[0], errs[0])
	}
	return sts[0].Attempt
}

func (f *fixture) attempts(runID string) []engine.Attempt {
	f.t.Helper()
	as, err := f.s.ReadAttempts(f.ctx, runID)
	if err != nil {
		f.t.Fatal(err)
	}
	return as
}

func attemptsText(as []engine.Attempt) string {
	var b strings.Builder
	for _, a := range as {
		fmt.Fprintf(&b, "[%d %s %d-%d %s %q]", a.Number, a.Outcome, a.Began.UnixMilli(), a.Ended.UnixMilli(), a.Consumer, a.Error)
	}
	return b.String()
}

// A run's attempt history holds each attempt that did not succeed, in
// order, with when it began and ended, its worker and its error: a retry
// (finish.lua, begun by start.lua), a lapsed lease (start.lua, when
// another worker takes the delivery over), and the final failure (begun in
// finish.lua itself). It expires with the record once the run ends (flag
// a), and ReadParts returns it.
func TestAttemptHistoryRecordsRetriesLapsesAndFailures(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		p.Retries, p.MaxDeliveries = 5, 10
		f.enqueue(p)
		t0 := time.UnixMilli(1_700_000_000_000)
		at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

		// Attempt 1, begun by start.lua for w1, is retried.
		n := f.startOne("t", "w1", f.read("t", "w1"), at(1))
		fr, err := f.s.Finish(f.ctx, &engine.FinishParams{RunID: p.RunID, Attempt: n, Outcome: engine.OutcomeRetry,
			Payload: []byte("boom <1>"), Now: at(2), RetryAt: at(2)})
		if err != nil || !fr.Written {
			t.Fatalf("retry = %+v, %v", fr, err)
		}
		if r, _ := f.s.GetRun(f.ctx, p.RunID); !r.HasAttempts {
			t.Fatalf("run %+v has no attempt history after a retry", r)
		}
		// Attempt 2 begins for w2, whose lease lapses: w3 takes it over
		// and begins attempt 3.
		if moved, err := f.s.Promote(f.ctx, 0, at(3), 10); err != nil || moved != 1 {
			t.Fatalf("promote = %d, %v", moved, err)
		}
		if n = f.startOne("t", "w2", f.read("t", "w2"), at(3)); n != 2 {
			t.Fatalf("second attempt = %d", n)
		}
		again, err := f.s.AutoClaim(f.ctx, 0, "t", "w3", 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if n = f.startOne("t", "w3", again, at(4)); n != 3 {
			t.Fatalf("attempt after the lapse = %d", n)
		}
		// Attempt 3 fails the run.
		fr, err = f.s.Finish(f.ctx, &engine.FinishParams{RunID: p.RunID, Attempt: n, Outcome: engine.OutcomeFailed,
			Payload: []byte("boom 3"), Now: at(5)})
		if err != nil || !fr.Written || fr.Status != "failed" {
			t.Fatalf("fail = %+v, %v", fr, err)
		}
		want := fmt.Sprintf("[1 retry %d-%d w1 %q][2 lapsed %d-%d w2 %q][3 failed %d-%d w3 %q]",
			at(1).UnixMilli(), at(2).UnixMilli(), "boom <1>",
			at(3).UnixMilli(), at(4).UnixMilli(), "lease lapsed: its worker stopped renewing it, and the run was delivered again",
			at(4).UnixMilli(), at(5).UnixMilli(), "boom 3")
		if got := attemptsText(f.attempts(p.RunID)); got != want {
			t.Errorf("attempts =\n%s\nwant\n%s", got, want)
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Attempts(p.RunID)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Errorf("attempt history's TTL = %v; want the record's retention (1h)", ttl)
		}
		r, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := f.s.ReadParts(f.ctx, r)
		if err != nil || attemptsText(parts.Attempts) != want || parts.Signals != 0 || parts.Steps != 0 {
			t.Errorf("parts = %+v, %v", parts, err)
		}
	})
}

// An attempt that finish.lua begins and fails in the same write goes into
// the history with the start and worker the call gave.
func TestAttemptHistoryOfAnAttemptBegunAtItsEnd(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "", engine.StrategyNone)
		f.enqueue(p)
		ds := f.read("t", "w1")
		if len(ds) != 1 {
			t.Fatalf("%d deliveries", len(ds))
		}
		t0 := time.UnixMilli(1_700_000_000_000)
		fp := began(ds[0], engine.OutcomeRetry, "slow start", t0, t0.Add(time.Second))
		if fr, err := f.s.Finish(f.ctx, fp); err != nil || !fr.Written {
			t.Fatalf("finish = %+v, %v", fr, err)
		}
		want := fmt.Sprintf("[1 retry %d-%d w1 %q]", t0.UnixMilli(), t0.Add(time.Second).UnixMilli(), "slow start")
		if got := attemptsText(f.attempts(p.RunID)); got != want {
			t.Errorf("attempts = %s, want %s", got, want)
		}
	})
}

// A run whose first attempt succeeds writes no attempt history and sets no
// flag for one: the success path pays nothing for it.
func TestSucceededRunHasNoAttemptHistory(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		for _, begin := range []bool{false, true} {
			p := f.params("t", "", engine.StrategyNone)
			f.enqueue(p)
			ds := f.read("t", "w1")
			var fp *engine.FinishParams
			if begin {
				fp = began(ds[0], engine.OutcomeSucceeded, `{"ok":true}`, f.now, f.now)
			} else {
				n := f.startOne("t", "w1", ds, f.now)
				fp = &engine.FinishParams{RunID: p.RunID, Attempt: n, Outcome: engine.OutcomeSucceeded, Payload: []byte(`1`), Now: f.now}
			}
			if fr, err := f.s.Finish(f.ctx, fp); err != nil || fr.Status != "succeeded" {
				t.Fatalf("finish = %+v, %v", fr, err)
			}
			r, _ := f.s.GetRun(f.ctx, p.RunID)
			if r.HasAttempts || f.exists(f.k.Attempts(p.RunID)) {
				t.Errorf("begun at its end %v: run %s has an attempt history", begin, p.RunID)
			}
			if parts, err := f.s.ReadParts(f.ctx, r); err != nil || len(parts.Attempts) != 0 {
				t.Errorf("parts = %+v, %v", parts, err)
			}
		}
	})
}

// A run retried more than MaxAttemptRecords times keeps its latest
// MaxAttemptRecords attempts.
func TestAttemptHistoryIsCapped(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "", engine.StrategyNone)
		total := engine.MaxAttemptRecords + 3
		p.Retries, p.MaxDeliveries = total+1, 0
		f.enqueue(p)
		for i := 1; i <= total; i++ {
			if i > 1 {
				if moved, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || moved != 1 {
					t.Fatalf("promote %d = %d, %v", i, moved, err)
				}
			}
			n := f.startOne("t", "w1", f.read("t", "w1"), f.now)
			if fr := f.finish(p.RunID, n, engine.OutcomeRetry, fmt.Sprint("boom ", i)); !fr.Written {
				t.Fatalf("retry %d = %+v", i, fr)
			}
		}
		as := f.attempts(p.RunID)
		if len(as) != engine.MaxAttemptRecords || as[0].Number != 4 || as[len(as)-1].Number != total ||
			as[len(as)-1].Error != fmt.Sprint("boom ", total) {
			t.Errorf("history holds %d attempts, %d to %d; want the latest %d, 4 to %d",
				len(as), as[0].Number, as[len(as)-1].Number, engine.MaxAttemptRecords, total)
		}
	})
}

// ReadParts counts a run's signals and steps, and ScanSteps pages through
// its steps by name; a run with neither reads nothing.
func TestRunPartsCountSignalsAndSteps(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		f.enqueue(p)
		for i := range 3 {
			if res, err := f.s.SignalRun(f.ctx, p.RunID, fmt.Sprint("sig-", i), []byte(fmt.Sprint(i)), 10); err != nil || !res.Delivered {
				t.Fatalf("signal = %+v, %v", res, err)
			}
		}
		for _, name := range []string{"b", "a"} {
			if _, err := f.s.SaveStepResult(f.ctx, p.RunID, name, []byte(`"`+name+`"`)); err != nil {
				t.Fatal(err)
			}
		}
		r, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil {
			t.Fatal(err)
		}
		parts, err := f.s.ReadParts(f.ctx, r)
		if err != nil || parts.Signals != 3 || parts.Steps != 2 || len(parts.Attempts) != 0 {
			t.Fatalf("parts = %+v, %v; want 3 signals, 2 steps", parts, err)
		}
		steps, next, err := f.s.ScanSteps(f.ctx, p.RunID, 0, 10)
		if err != nil || next != 0 || len(steps) != 2 || steps[0].Name != "a" || string(steps[1].Result) != `"b"` {
			t.Fatalf("steps = %+v, next %d, %v", steps, next, err)
		}
		sigs, err := f.s.ReadSignals(f.ctx, p.RunID, "0", 10, -1)
		if err != nil || len(sigs) != 3 || sigs[0].Sent.IsZero() {
			t.Fatalf("signals = %+v, %v", sigs, err)
		}
		plain := f.params("t", "", engine.StrategyNone)
		f.enqueue(plain)
		r, _ = f.s.GetRun(f.ctx, plain.RunID)
		if parts, err := f.s.ReadParts(f.ctx, r); err != nil || parts.Signals != 0 || parts.Steps != 0 || parts.Attempts != nil {
			t.Fatalf("parts of a plain run = %+v, %v", parts, err)
		}
	})
}

// An attempt its worker gives back as it shuts down (requeue.lua) goes
// into the history as requeued, with its worker and start.
func TestAttemptHistoryRecordsARequeue(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "", engine.StrategyNone)
		f.running(p, "c")
		if r, err := f.s.Requeue(f.ctx, p.RunID, "t", 1); err != nil || !r.Written {
			t.Fatalf("requeue = %+v, %v", r, err)
		}
		as := f.attempts(p.RunID)
		if len(as) != 1 || as[0].Number != 1 || as[0].Outcome != redisstore.AttemptRequeued || as[0].Consumer != "c" ||
			as[0].Began.UnixMilli() != f.now.UnixMilli() || as[0].Ended.Before(as[0].Began) || as[0].Error == "" {
			t.Fatalf("attempts = %s", attemptsText(as))
		}
		if st := f.start(f.read("t", "c2")[0], "c2"); !st.Started || st.Attempt != 2 {
			t.Fatalf("start after requeue = %+v", st)
		}
		if as := f.attempts(p.RunID); len(as) != 1 {
			t.Fatalf("a start after a requeue added to the history: %s", attemptsText(as))
		}
	})
}
