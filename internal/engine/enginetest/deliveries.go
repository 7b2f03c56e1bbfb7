package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var deliveryCases = []suiteCase{
	{"ReadDeliversEachEntryOnce", readOnce},
	{"ReadWaitsForAnEntry", readWaits},
	{"StartBeginsTheAttempt", startBegins},
	{"StartRefusesMissingCancelledStaleAndExhausted", startRefusals},
	{"StartOfASupersededRunNamesTheNewOwner", startSuperseded},
	{"FinishRecordsEachOutcome", finishOutcomes},
	{"FinishReleasesOnlyAKeyItsRunHolds", finishOwnKey},
	{"RetryKeepsTheKeyAndQueuesTheRunWhenDue", retryRequeues},
	{"FinishOfAStaleAttemptIsRefused", finishStale},
	{"ReplayedFinishIsIdempotent", finishReplay},
	{"ConcurrentFinishesOfOneAttemptWriteOnce", finishConcurrent},
	{"FinishThatBeginsTheAttempt", finishBegins},
	{"FinishErrorsStayWithTheirOutcome", finishErrors},
	{"FinishOfAMissingRun", finishMissing},
	{"HeartbeatReportsEachLease", heartbeatStates},
	{"ReadAndVanishedDeliveryIsClaimedByAnother", crashAfterRead},
	{"LeaseNotHeartbeatenLapses", leaseLapses},
	{"TwoConsumersClaimingOneDeliveryStartItOnce", claimOnce},
	{"RequeueGivesTheRunBack", requeue},
	{"StepResultsAreSavedOnce", steps},
	{"SignalsAreStoredOncePerID", signals},
	{"CancelTopicsAnnounceCancelledRuns", cancelTopics},
}

func readOnce(h *h) {
	var want []string
	for range 3 {
		p := h.params("t", "", engine.StrategyNone)
		h.enqueue(p)
		want = append(want, p.RunID)
	}
	if got := ids(h.read("t", "w1")); !slices.Equal(got, sorted(want...)) {
		h.Fatalf("deliveries %v, want %v", got, want)
	}
	if ds := h.read("t", "w1"); len(ds) != 0 {
		h.Fatalf("read again: %+v", ds)
	}
	if ds := h.read("t", "w2"); len(ds) != 0 {
		h.Fatalf("another consumer read delivered entries again: %+v", ds)
	}
}

// A read with a block waits for an entry that comes meanwhile.
func readWaits(h *h) {
	if h.opts.NoBlocking {
		return
	}
	p := h.params("t", "", engine.StrategyNone)
	p.Delay = time.Hour
	h.enqueue(p)
	part := h.partOf(p.RunID)
	if err := h.e.EnsureGroup(h.ctx, "t"); err != nil {
		h.Fatal(err)
	}
	type read struct {
		ds  []engine.Delivery
		err error
	}
	got := make(chan read, 1)
	go func() {
		ds, err := h.e.ReadGroup(h.ctx, part, "w", []string{"t"}, 10, eventuallyWithin)
		got <- read{ds, err}
	}()
	time.Sleep(100 * time.Millisecond) // the read is (most likely) waiting
	if n := h.promote(h.now.Add(time.Hour)); n != 1 {
		h.Fatalf("promoted %d", n)
	}
	r := <-got
	if r.err != nil {
		h.Fatal(r.err)
	}
	h.only(r.ds, p.RunID)
}

func startBegins(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w")
	st := h.start("w", d)
	if !st.Started || st.Attempt != 1 || st.Spec == nil || !bytes.Equal(st.Spec.Input, p.Input) || st.Spec.Key != "k" {
		h.Fatalf("start = %+v", st)
	}
	r := h.run(p.RunID)
	if r.Status != engine.StatusRunning || r.Attempt != 1 || r.Consumer != "w" || !ms(r.Started, h.now) {
		h.Fatalf("run = %+v, want running attempt 1 by w since %v", r, h.now)
	}
}

func startRefusals(h *h) {
	// A cancelled run's delivery is refused with the cancel's reason.
	p := h.params("t", "", engine.StrategyNone)
	d := h.deliver(p, "w")
	if _, err := h.e.Cancel(h.ctx, p.RunID, "by test", h.now); err != nil {
		h.Fatal(err)
	}
	if st := h.start("w", d); st.Started || st.Reason != engine.StatusCancelled || st.Error != "by test" {
		h.Fatalf("start of a cancelled run = %+v", st)
	}
	// A delivery of no run is dropped.
	if st := h.start("w", engine.Delivery{Task: "t", RunID: "no-such-run", EntryID: d.EntryID}); st.Started || st.Reason != "missing" {
		h.Fatalf("start of a missing run = %+v", st)
	}
	// An older delivery of a run queued again is stale.
	q := h.params("t", "", engine.StrategyNone)
	old := h.deliver(q, "w")
	st := h.start("w", old)
	if r, err := h.e.Requeue(h.ctx, q.RunID, "t", st.Attempt); err != nil || !r.Written {
		h.Fatalf("requeue = %+v, %v", r, err)
	}
	if st := h.start("w", old); st.Started || st.Reason != "stale" {
		h.Fatalf("start of an older delivery = %+v, want stale", st)
	}
	// A run delivered more than its maximum fails, and its key is free.
	x := h.params("x", "kx", engine.StrategyStatus)
	x.MaxDeliveries = 1
	h.running(x, "w")
	again := h.only(h.claim("x", "w2", 0), x.RunID)
	if st := h.start("w2", again); st.Started || st.Reason != "exhausted" {
		h.Fatalf("start past the maximum deliveries = %+v, want exhausted", st)
	}
	if st := h.status(x.RunID); st != engine.StatusFailed {
		h.Fatalf("exhausted run is %q, want failed", st)
	}
	if _, held := h.key("kx"); held {
		h.Fatal("the exhausted run's key is still held")
	}
}

func startSuperseded(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w")
	newer := h.params("t", "k", engine.StrategyStatus)
	newer.Policy = engine.PolicySupersede
	if r := h.enqueue(newer); !r.Accepted || r.Superseded != p.RunID {
		h.Fatalf("supersede = %+v", r)
	}
	if st := h.start("w", d); st.Started || st.Reason != engine.StatusCancelled || st.Error != "superseded by run "+newer.RunID {
		h.Fatalf("start = %+v, want refused as cancelled, superseded by %s", st, newer.RunID)
	}
}

func finishOutcomes(h *h) {
	// Succeeded: the result is kept, a status key released.
	p := h.params("t", "ok", engine.StrategyStatus)
	d, st := h.running(p, "w")
	if r := h.finish(h.outcome(d, st, engine.OutcomeSucceeded, `{"ok":true}`)); !r.Written || r.Status != engine.StatusSucceeded {
		h.Fatalf("finish = %+v", r)
	}
	run := h.run(p.RunID)
	if run.Status != engine.StatusSucceeded || string(run.Result) != `{"ok":true}` || !ms(run.Finished, h.now) {
		h.Fatalf("run = %+v", run)
	}
	if _, held := h.key("ok"); held {
		h.Fatal("status key not released when its run succeeded")
	}
	// Failed: the error is kept, the key released.
	p = h.params("t", "fail", engine.StrategyStatus)
	d, st = h.running(p, "w")
	if r := h.finish(h.outcome(d, st, engine.OutcomeFailed, "boom")); !r.Written || r.Status != engine.StatusFailed {
		h.Fatalf("finish failed = %+v", r)
	}
	if run := h.run(p.RunID); run.Status != engine.StatusFailed || run.Error != "boom" {
		h.Fatalf("failed run = %+v", run)
	}
	if _, held := h.key("fail"); held {
		h.Fatal("status key not released when its run failed")
	}
	// Retained: the key outlives its run for Retain.
	p = h.params("t", "kept", engine.StrategyStatus)
	p.Retain = 30 * time.Second
	d, st = h.running(p, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	if ks, held := h.key("kept"); !held || ks.Owner != p.RunID || ks.TTL <= 0 || ks.TTL > 30*time.Second {
		h.Fatalf("retained key = %+v, held %v; want kept for at most 30s", ks, held)
	}
	// A ttl key keeps its window whatever the run does.
	p = h.params("t", "window", engine.StrategyTTL)
	d, st = h.running(p, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	if ks, held := h.key("window"); !held || ks.TTL <= 30*time.Second {
		h.Fatalf("ttl key = %+v, held %v; want its window kept", ks, held)
	}
	// The stream keeps nothing of ended runs.
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"].Queued != 0 || q["t"].InFlight != 0 {
		h.Fatalf("queue stats after every run ended = %+v, %v", q, err)
	}
}

// A run whose key lapsed while it ran, and was claimed by a newer run,
// leaves the newer run's key alone when it ends.
func finishOwnKey(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	p.Hold = 100 * time.Millisecond
	d, st := h.running(p, "w")
	h.eventually("the running run's key lapses", func() bool {
		h.elapse(50 * time.Millisecond)
		_, held := h.key("k")
		return !held
	})
	newer := h.params("t", "k", engine.StrategyStatus)
	if r := h.enqueue(newer); !r.Accepted {
		h.Fatalf("trigger of the lapsed key = %+v", r)
	}
	if r := h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}")); !r.Written {
		h.Fatalf("finish = %+v", r)
	}
	if ks, held := h.key("k"); !held || ks.Owner != newer.RunID {
		h.Fatalf("key = %+v, held %v; want still the newer run's, %s", ks, held, newer.RunID)
	}
}

func retryRequeues(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	fp := h.outcome(d, st, engine.OutcomeRetry, "transient")
	fp.RetryAt = h.now.Add(time.Hour)
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusQueued {
		h.Fatalf("retry = %+v", r)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Fails != 1 || r.Error != "transient" {
		h.Fatalf("run after retry = %+v", r)
	}
	if _, held := h.key("k"); !held {
		h.Fatal("key released while the run waits for its retry")
	}
	if _, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID}); err != nil || !ms(dues[0], fp.RetryAt) {
		h.Fatalf("due = %v, %v; want %v", dues, err, fp.RetryAt)
	}
	part := h.partOf(p.RunID)
	if n, next, err := h.e.PromoteDue(h.ctx, part, h.now, 10); err != nil || n != 0 || !ms(next, fp.RetryAt) {
		h.Fatalf("promote before due = %d, next %v, %v", n, next, err)
	}
	if n, next, err := h.e.PromoteDue(h.ctx, part, h.now.Add(2*time.Hour), 10); err != nil || n != 1 || !next.IsZero() {
		h.Fatalf("promote when due = %d, next %v, %v", n, next, err)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 2 || st.Spec.Fails != 1 {
		h.Fatalf("start of the retry = %+v, want attempt 2 after one fail", st)
	}
}

// A finish fenced by an older attempt writes nothing: another consumer
// took the delivery over and began the next attempt.
func finishStale(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "old")
	again := h.only(h.claim("t", "new", 0), p.RunID)
	st2 := h.start("new", again)
	if !st2.Started || st2.Attempt != 2 {
		h.Fatalf("start of the reclaimed delivery = %+v, want attempt 2", st2)
	}
	if r := h.finish(h.outcome(d, st, engine.OutcomeSucceeded, `"stale"`)); r.Written || r.Status != "stale" {
		h.Fatalf("stale finish = %+v, want refused as stale", r)
	}
	if ks, held := h.key("k"); !held || ks.Owner != p.RunID {
		h.Fatal("a stale attempt released the key")
	}
	if r := h.finish(h.outcome(again, st2, engine.OutcomeSucceeded, `"fresh"`)); !r.Written {
		h.Fatalf("finish of the current attempt = %+v", r)
	}
	if r := h.run(p.RunID); string(r.Result) != `"fresh"` {
		h.Fatalf("result = %s", r.Result)
	}
}

// The same finish sent again (its reply was lost) changes nothing and says
// the run already ended.
func finishReplay(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	fp := h.outcome(d, st, engine.OutcomeSucceeded, `{"n":1}`)
	if r := h.finish(fp); !r.Written {
		h.Fatalf("finish = %+v", r)
	}
	before := h.run(p.RunID)
	again := *fp
	again.Now = h.now.Add(time.Minute)
	if r := h.finish(&again); r.Written || r.Status != engine.StatusSucceeded {
		h.Fatalf("replayed finish = %+v, want nothing written, status succeeded", r)
	}
	if after := h.run(p.RunID); fmt.Sprint(after) != fmt.Sprint(before) {
		h.Fatalf("a replayed finish changed the record:\n%+v\n%+v", before, after)
	}
}

func finishConcurrent(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	const n = 16
	rs := make([]engine.FinishResult, n)
	errs := make([]error, n)
	race(n, func(i int) {
		out, es := h.e.FinishBatch(h.ctx, []*engine.FinishParams{h.outcome(d, st, engine.OutcomeSucceeded, fmt.Sprint(i))})
		rs[i], errs[i] = out[0], es[0]
	})
	written := 0
	for i := range rs {
		if errs[i] != nil {
			h.Fatalf("finish %d: %v", i, errs[i])
		}
		if rs[i].Written {
			written++
		} else if rs[i].Status != engine.StatusSucceeded {
			h.Fatalf("finish %d = %+v, want the run's status", i, rs[i])
		}
	}
	if written != 1 {
		h.Fatalf("%d of %d finishes of one attempt wrote, want 1", written, n)
	}
}

// began is the finish of d's next attempt that also begins it, as a
// worker sends it when its handler returned before the attempt began.
func (h *h) began(d engine.Delivery, o engine.Outcome, at time.Time, consumer string) *engine.FinishParams {
	h.Helper()
	if d.Spec == nil {
		h.Fatalf("delivery %+v carries no spec, which a finish that begins needs", d)
	}
	return &engine.FinishParams{RunID: d.RunID, Attempt: d.Spec.Attempts + 1, Outcome: o, Payload: []byte(`{}`),
		Now: h.now, RetryAt: h.now.Add(time.Minute), Task: d.Task, EntryID: d.EntryID, Spec: d.Spec,
		Began: at, Consumer: consumer}
}

func finishBegins(h *h) {
	at := h.now.Add(-5 * time.Millisecond)
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w1")
	if r := h.finish(h.began(d, engine.OutcomeSucceeded, at, "w1")); !r.Written || r.Status != engine.StatusSucceeded {
		h.Fatalf("finish that begins = %+v", r)
	}
	if r := h.run(p.RunID); r.Attempt != 1 || r.Consumer != "w1" || !ms(r.Started, at) || r.Status != engine.StatusSucceeded {
		h.Fatalf("run = %+v, want attempt 1 by w1 begun at %v", r, at)
	}
	if _, held := h.key("k"); held {
		h.Fatal("key held after the run succeeded")
	}
	// Refused once the run moved on: cancelled, or begun by another.
	c := h.params("t", "kc", engine.StrategyStatus)
	dc := h.deliver(c, "w1")
	if _, err := h.e.Cancel(h.ctx, c.RunID, "by test", h.now); err != nil {
		h.Fatal(err)
	}
	if r := h.finish(h.began(dc, engine.OutcomeSucceeded, at, "w1")); r.Written || r.Status != engine.StatusCancelled {
		h.Fatalf("finish that begins a cancelled run = %+v", r)
	}
	o := h.params("t", "ko", engine.StrategyStatus)
	do := h.deliver(o, "w1")
	again := h.only(h.claim("t", "w2", 0), o.RunID)
	if st := h.start("w2", again); !st.Started {
		h.Fatalf("start of the reclaimed delivery = %+v", st)
	}
	if r := h.finish(h.began(do, engine.OutcomeSucceeded, at, "w1")); r.Written || r.Status != "stale" {
		h.Fatalf("finish that begins a run begun elsewhere = %+v, want stale", r)
	}
	if r := h.run(o.RunID); r.Status != engine.StatusRunning || r.Consumer != "w2" {
		h.Fatalf("run = %+v, want running by w2", r)
	}
	// Queued again (its worker gave it back) with another entry: the old
	// delivery is stale, the new one begins.
	q := h.params("u", "kq", engine.StrategyStatus)
	dq := h.deliver(q, "w1")
	st := h.start("w1", dq)
	if r, err := h.e.Requeue(h.ctx, q.RunID, "u", st.Attempt); err != nil || !r.Written {
		h.Fatalf("requeue = %+v, %v", r, err)
	}
	if r := h.finish(h.began(dq, engine.OutcomeSucceeded, at, "w1")); r.Written || r.Status != "stale" {
		h.Fatalf("finish that begins an older delivery = %+v, want stale", r)
	}
	next := h.only(h.read("u", "w1"), q.RunID)
	if next.Spec == nil || next.Spec.Attempts != 1 {
		h.Fatalf("new delivery %+v, want one saying an attempt was begun", next)
	}
	if r := h.finish(h.began(next, engine.OutcomeSucceeded, at, "w1")); !r.Written {
		h.Fatalf("finish that begins the new delivery = %+v", r)
	}
	// An attempt begun and retried in one write goes into the history
	// with the start and worker the call gave.
	rp := h.params("v", "", engine.StrategyNone)
	fp := h.began(h.deliver(rp, "w1"), engine.OutcomeRetry, at, "w1")
	fp.Payload = []byte("slow start")
	if r := h.finish(fp); !r.Written {
		h.Fatalf("finish that begins and retries = %+v", r)
	}
	want := fmt.Sprintf("[1 retry %d-%d w1 %q]", at.UnixMilli(), h.now.UnixMilli(), "slow start")
	if as, err := h.e.ReadAttempts(h.ctx, rp.RunID); err != nil || attemptsText(as) != want {
		h.Fatalf("attempts = %s, %v; want %s", attemptsText(as), err, want)
	}
	if r := h.run(p.RunID); r.HasAttempts {
		h.Fatal("a run that succeeded at its first attempt has an attempt history")
	}
}

func finishErrors(h *h) {
	var fps []*engine.FinishParams
	var runs []string
	for i := range 3 {
		p := h.params("t", fmt.Sprint("k", i), engine.StrategyStatus)
		d, st := h.running(p, "w")
		o := engine.OutcomeSucceeded
		if i == 1 {
			o = "skipped"
		}
		fps = append(fps, h.outcome(d, st, o, "{}"))
		runs = append(runs, p.RunID)
	}
	rs, errs := h.e.FinishBatch(h.ctx, fps)
	if errs[1] == nil {
		h.Fatalf("finish with an unknown outcome: %+v, want an error", rs[1])
	}
	for _, i := range []int{0, 2} {
		if errs[i] != nil || !rs[i].Written {
			h.Fatalf("finish %d beside a refused one = %+v, %v", i, rs[i], errs[i])
		}
	}
	if st := h.status(runs[1]); st != engine.StatusRunning {
		h.Fatalf("the refused outcome's run is %q, want still running", st)
	}
}

func finishMissing(h *h) {
	r := h.finish(&engine.FinishParams{RunID: "no-such-run", Attempt: 1, Outcome: engine.OutcomeSucceeded, Payload: []byte(`{}`), Now: h.now})
	if r.Written || r.Status != "missing" {
		h.Fatalf("finish of no run = %+v, want missing", r)
	}
}

func heartbeatStates(h *h) {
	// p2 first: the oldest entry of its partition, which a claim of one
	// takes.
	p2, p1, p3 := h.params("t", "", engine.StrategyNone), h.params("t", "", engine.StrategyNone), h.params("t", "", engine.StrategyNone)
	for _, p := range []*engine.EnqueueParams{p2, p1, p3} {
		h.enqueue(p)
	}
	ds := h.read("t", "me")
	if len(ds) != 3 {
		h.Fatalf("%d deliveries, want 3", len(ds))
	}
	leases := map[string]engine.Lease{}
	for _, d := range ds {
		st := h.start("me", d)
		leases[d.RunID] = engine.Lease{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt}
	}
	taken, err := h.e.AutoClaim(h.ctx, h.partOf(p2.RunID), "t", "other", 0, 1)
	if err != nil || len(taken) != 1 || taken[0].RunID != p2.RunID {
		h.Fatalf("claim = %+v, %v; want p2's delivery", taken, err)
	}
	if _, err := h.e.Cancel(h.ctx, p3.RunID, "x", h.now); err != nil {
		h.Fatal(err)
	}
	stale := leases[p1.RunID]
	stale.Attempt = 0
	reps, err := h.e.Heartbeat(h.ctx, "t", "me", []engine.Lease{leases[p1.RunID], leases[p2.RunID], leases[p3.RunID], stale})
	if err != nil {
		h.Fatal(err)
	}
	want := []engine.LeaseState{engine.LeaseHeld, engine.LeaseLost, engine.LeaseFinished, engine.LeaseStale}
	if len(reps) != len(want) {
		h.Fatalf("%d reports for %d leases", len(reps), len(want))
	}
	for i := range want {
		if reps[i].State != want[i] {
			h.Fatalf("reports = %+v, want states %v", reps, want)
		}
	}
	if reps[2].Reason != "x" {
		h.Fatalf("cancelled run's reason = %q, want the cancel's", reps[2].Reason)
	}
	// A held lease is extended: nothing is idle for long.
	if ds := h.claim("t", "thief", time.Hour); len(ds) != 0 {
		h.Fatalf("claimed a lease that was renewed: %+v", ds)
	}
	// The heartbeat did not take p2 back from the consumer that took it.
	if err := h.e.BeatWorker(h.ctx, workerRecord("other", "t"), h.now, 0); err != nil {
		h.Fatal(err)
	}
	v := h.workers(h.now)
	if len(v.Workers) != 1 || len(v.Workers[0].Runs) != 1 || v.Workers[0].Runs[0].RunID != p2.RunID {
		h.Fatalf("workers = %+v, want other holding %s", v.Workers, p2.RunID)
	}
}

// A consumer that read a delivery and vanished before starting it: the
// delivery, idle, is claimed by another, and the lost delivery counts
// towards the run's deliveries.
func crashAfterRead(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	h.deliver(p, "gone")
	var again []engine.Delivery
	h.eventually("the idle delivery is claimed", func() bool {
		again = h.claim("t", "w2", 100*time.Millisecond)
		return len(again) > 0
	})
	d := h.only(again, p.RunID)
	if !d.Redelivered {
		h.Fatalf("claimed delivery %+v not marked redelivered", d)
	}
	if st := h.start("w2", d); !st.Started || st.Attempt != 2 {
		h.Fatalf("start of the claimed delivery = %+v, want attempt 2 (the lost delivery counts)", st)
	}
	// A run whose handler kills its worker stops at its maximum
	// deliveries, begun or not.
	x := h.params("x", "kx", engine.StrategyStatus)
	x.MaxDeliveries = 1
	h.deliver(x, "gone")
	dx := h.only(h.claim("x", "w2", 0), x.RunID)
	if st := h.start("w2", dx); st.Started || st.Reason != "exhausted" {
		h.Fatalf("start of the second delivery = %+v, want exhausted", st)
	}
	if st := h.status(x.RunID); st != engine.StatusFailed {
		h.Fatalf("exhausted run is %q", st)
	}
	if _, held := h.key("kx"); held {
		h.Fatal("the exhausted run's key is held")
	}
}

// A lease not heartbeaten lapses: another consumer claims the delivery and
// begins the next attempt; the first holder's heartbeat learns it lost
// the lease, its finish is refused, and the history records the lapse.
func leaseLapses(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w1")
	var again []engine.Delivery
	h.eventually("the lapsed lease is claimed", func() bool {
		again = h.claim("t", "w2", 200*time.Millisecond)
		return len(again) > 0
	})
	d2 := h.only(again, p.RunID)
	st2 := h.start("w2", d2)
	if !st2.Started || st2.Attempt != 2 {
		h.Fatalf("start after the lapse = %+v", st2)
	}
	reps, err := h.e.Heartbeat(h.ctx, "t", "w1", []engine.Lease{{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt}})
	if err != nil || len(reps) != 1 || reps[0].State == engine.LeaseHeld {
		h.Fatalf("heartbeat of the lapsed lease = %+v, %v; want it lost", reps, err)
	}
	if r := h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}")); r.Written || r.Status != "stale" {
		h.Fatalf("finish of the lapsed attempt = %+v, want stale", r)
	}
	as, err := h.e.ReadAttempts(h.ctx, p.RunID)
	if err != nil || len(as) != 1 || as[0].Number != 1 || as[0].Outcome != "lapsed" || as[0].Consumer != "w1" {
		h.Fatalf("attempts = %+v, %v; want attempt 1 lapsed by w1", as, err)
	}
	if r := h.finish(h.outcome(d2, st2, engine.OutcomeSucceeded, "{}")); !r.Written {
		h.Fatalf("finish of the current attempt = %+v", r)
	}
}

// Consumers claiming one idle delivery at once: one gets it, and it is
// started once.
func claimOnce(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	h.running(p, "w0")
	const minIdle = 2 * time.Second
	time.Sleep(minIdle + 100*time.Millisecond) // idle past minIdle: w0 vanished
	part := h.partOf(p.RunID)
	const n = 8
	got := make([][]engine.Delivery, n)
	starts := make([]bool, n)
	errs := make([]error, n)
	race(n, func(i int) {
		c := fmt.Sprint("w", i+1)
		got[i], errs[i] = h.e.AutoClaim(h.ctx, part, "t", c, minIdle, 10)
		if errs[i] != nil || len(got[i]) == 0 {
			return
		}
		rs, es := h.e.StartBatch(h.ctx, c, h.now, got[i])
		errs[i] = es[0]
		starts[i] = rs[0].Started
	})
	claimed, started := 0, 0
	for i := range n {
		if errs[i] != nil {
			h.Fatalf("consumer %d: %v", i+1, errs[i])
		}
		claimed += len(got[i])
		if starts[i] {
			started++
		}
	}
	if claimed != 1 || started != 1 {
		h.Fatalf("%d claims and %d starts of one delivery, want 1 and 1", claimed, started)
	}
}

func requeue(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	_, st := h.running(p, "c")
	if r, err := h.e.Requeue(h.ctx, p.RunID, "t", st.Attempt); err != nil || !r.Written {
		h.Fatalf("requeue = %+v, %v", r, err)
	}
	if r, err := h.e.Requeue(h.ctx, p.RunID, "t", st.Attempt); err != nil || r.Written {
		h.Fatalf("requeue of a queued run = %+v, %v; want nothing written", r, err)
	}
	as, err := h.e.ReadAttempts(h.ctx, p.RunID)
	if err != nil || len(as) != 1 || as[0].Number != 1 || as[0].Outcome != "requeued" || as[0].Consumer != "c" || !ms(as[0].Began, h.now) {
		h.Fatalf("attempts = %+v, %v; want attempt 1 requeued by c", as, err)
	}
	if st := h.start("c2", h.only(h.read("t", "c2"), p.RunID)); !st.Started || st.Attempt != 2 {
		h.Fatalf("start after requeue = %+v", st)
	}
}

func steps(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	h.enqueue(p)
	if got, err := h.e.SaveStepResult(h.ctx, p.RunID, "a", []byte(`1`)); err != nil || string(got) != `1` {
		h.Fatalf("save = %s, %v", got, err)
	}
	if got, err := h.e.SaveStepResult(h.ctx, p.RunID, "a", []byte(`2`)); err != nil || string(got) != `1` {
		h.Fatalf("save again = %s, %v; want the first result", got, err)
	}
	if got, ok, err := h.e.StepResult(h.ctx, p.RunID, "a"); err != nil || !ok || string(got) != `1` {
		h.Fatalf("step a = %s, %v, %v", got, ok, err)
	}
	if _, ok, err := h.e.StepResult(h.ctx, p.RunID, "b"); err != nil || ok {
		h.Fatalf("step never saved: %v, %v", ok, err)
	}
	// Saved at once by many: each is answered with the one stored.
	const n = 16
	res := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := h.e.SaveStepResult(h.ctx, p.RunID, "race", []byte(fmt.Sprint(i)))
			if err != nil {
				res[i] = err.Error()
				return
			}
			res[i] = string(got)
		}()
	}
	wg.Wait()
	stored, ok, err := h.e.StepResult(h.ctx, p.RunID, "race")
	if err != nil || !ok {
		h.Fatalf("step race: %v, %v", ok, err)
	}
	for i, r := range res {
		if r != string(stored) {
			h.Fatalf("save %d answered %q, the stored result is %q", i, r, stored)
		}
	}
	if _, ok, err := h.e.StepResult(h.ctx, "no-such-run", "a"); err != nil || ok {
		h.Fatalf("step of no run: %v, %v", ok, err)
	}
}

func signals(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	h.enqueue(p)
	for range 2 {
		if r, err := h.e.SignalRun(h.ctx, p.RunID, "sig-1", []byte(`1`), 3); err != nil || !r.Delivered || r.SignalID != "sig-1" || r.RunID != p.RunID {
			h.Fatalf("signal = %+v, %v", r, err)
		}
	}
	if r, err := h.e.SignalKey(h.ctx, "k", "sig-2", []byte(`2`), 3); err != nil || !r.Delivered || r.RunID != p.RunID {
		h.Fatalf("signal by key = %+v, %v", r, err)
	}
	if r, err := h.e.SignalRun(h.ctx, p.RunID, "sig-3", []byte(`3`), 3); err != nil || !r.Delivered {
		h.Fatalf("third signal = %+v, %v", r, err)
	}
	if r, err := h.e.SignalRun(h.ctx, p.RunID, "sig-4", []byte(`4`), 3); err != nil || r.Delivered || r.Reason != "full" {
		h.Fatalf("signal past the bound = %+v, %v; want full", r, err)
	}
	sigs, err := h.e.ReadSignals(h.ctx, p.RunID, "", 100, -1)
	if err != nil || len(sigs) != 3 {
		h.Fatalf("signals = %+v, %v", sigs, err)
	}
	for i, s := range sigs {
		if s.ID != fmt.Sprint("sig-", i+1) || string(s.Payload) != fmt.Sprint(i+1) || s.Sent.IsZero() || s.Cursor == "" {
			h.Fatalf("signal %d = %+v; want each once, in order", i, s)
		}
	}
	rest, err := h.e.ReadSignals(h.ctx, p.RunID, sigs[0].Cursor, 100, -1)
	if err != nil || len(rest) != 2 || rest[0].ID != "sig-2" {
		h.Fatalf("signals after the first = %+v, %v", rest, err)
	}
	if _, err := h.e.ReadSignals(h.ctx, p.RunID, "not a cursor", 10, -1); !errors.Is(err, engine.ErrInvalidCursor) {
		h.Fatalf("a bad cursor: %v, want ErrInvalidCursor", err)
	}
	if r, err := h.e.SignalRun(h.ctx, "no-such-run", "s", []byte(`1`), 0); err != nil || r.Delivered || r.Reason != "missing" {
		h.Fatalf("signal of no run = %+v, %v", r, err)
	}
	if r, err := h.e.SignalKey(h.ctx, "free", "s", []byte(`1`), 0); err != nil || r.Delivered || r.Reason != "none" {
		h.Fatalf("signal of a free key = %+v, %v", r, err)
	}
	q := h.params("u", "", engine.StrategyNone)
	d, st := h.running(q, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	if r, err := h.e.SignalRun(h.ctx, q.RunID, "s", []byte(`1`), 0); err != nil || r.Delivered || r.Reason != "finished" || r.Status != engine.StatusSucceeded {
		h.Fatalf("signal of an ended run = %+v, %v", r, err)
	}
}

// A run cancelled while a worker may hold it is announced on a cancel
// topic, with the notice CancelWithNotice adds.
func cancelTopics(h *h) {
	topics, err := h.e.CancelTopics(h.ctx)
	if err != nil || len(topics) != h.parts {
		h.Fatalf("cancel topics = %v, %v; want one per partition (%d)", topics, err, h.parts)
	}
	n := h.subscribe(topics...)
	p := h.params("t", "", engine.StrategyNone)
	h.running(p, "w")
	if r, err := h.e.Cancel(h.ctx, p.RunID, "by test", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	if got := h.receive(n, 1); fmt.Sprint(flatten(got)) != "["+p.RunID+"]" {
		h.Fatalf("notices = %v, want %s", got, p.RunID)
	}
	// A queued run too: a handler may run it before its attempt begins.
	qp := h.params("t", "", engine.StrategyNone)
	h.enqueue(qp)
	if r, err := h.e.Cancel(h.ctx, qp.RunID, "by test", h.now); err != nil || !r.Written {
		h.Fatalf("cancel of a queued run = %+v, %v", r, err)
	}
	if got := h.receive(n, 1); fmt.Sprint(flatten(got)) != "["+qp.RunID+"]" {
		h.Fatalf("notices = %v, want %s", got, qp.RunID)
	}
	q := h.params("t", "", engine.StrategyNone)
	h.enqueue(q)
	if r, err := h.e.CancelWithNotice(h.ctx, q.RunID, "by test", "why", h.now); err != nil || !r.Written {
		h.Fatalf("cancel with notice = %+v, %v", r, err)
	}
	got := flatten(h.receive(n, 1))
	if len(got) != 1 || !bytes.Contains([]byte(got[0]), []byte(q.RunID)) || !bytes.Contains([]byte(got[0]), []byte("why")) {
		h.Fatalf("notice = %v, want one naming %s and why", got, q.RunID)
	}
}

func flatten(m map[string][]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v...)
	}
	return out
}
