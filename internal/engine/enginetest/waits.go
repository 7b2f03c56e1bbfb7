package enginetest

import (
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Durable waits: an attempt that ends with OutcomeWait gives its delivery
// back, and the run waits, neither failed nor held by a worker, until its
// due time or a signal.
var waitCases = []suiteCase{
	{"WaitSuspendsTheRunUntilDue", waitUntilDue},
	{"SignalWakesARunWaitingForOne", waitForSignal},
	{"WaitsDoNotCountTowardMaxDeliveries", waitsAreNotDeliveries},
	{"CancelOfAWaitingRun", waitCancelled},
	{"WaitBegunWithItsOutcome", waitBegun},
	{"SignalDuringTheAttemptEndsItsSignalWait", waitSignalledBefore},
	{"EventWaitersAreForgottenOnlyAsRead", eventWaiters},
	{"RecoveryWakesWaitersAnEventCameAfter", recoverEventWaiters},
	{"WakeRunsWakesEventAndSignalWaitsOnly", wakeRuns},
	{"WakeRunsWakesAWaitForChildren", wakeChildrenWait},
}

// wait ends d's attempt st waiting for what, until due (zero: no timeout).
func (h *h) wait(d engine.Delivery, st engine.StartResult, what string, due time.Time) {
	h.Helper()
	fp := h.outcome(d, st, engine.OutcomeWait, what)
	fp.RetryAt = due
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusWaiting {
		h.Fatalf("wait of %s = %+v, want written, waiting", d.RunID, r)
	}
}

func waitUntilDue(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	due := h.now.Add(time.Hour)
	h.wait(d, st, "sleep until later", due)
	r := h.run(p.RunID)
	if r.Status != engine.StatusWaiting || r.Waiting != "sleep until later" || r.Fails != 0 || r.Waits != 1 || r.Error != "" || r.Attempt != 1 {
		h.Fatalf("waiting run = %+v; want waiting, what it waits for, no failure", r)
	}
	if _, held := h.key("k"); !held {
		h.Fatal("key released while the run waits")
	}
	if _, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID}); err != nil || !ms(dues[0], due) {
		h.Fatalf("due = %v, %v; want %v", dues, err, due)
	}
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"].Queued != 0 || q["t"].InFlight != 0 {
		h.Fatalf("queue stats while waiting = %+v, %v; want nothing queued or in flight", q, err)
	}
	if ds := h.read("t", "w"); len(ds) != 0 {
		h.Fatalf("deliveries while waiting = %+v", ds)
	}
	part := h.partOf(p.RunID)
	if n, next, err := h.e.PromoteDue(h.ctx, part, h.now, 10); err != nil || n != 0 || !ms(next, due) {
		h.Fatalf("promote before due = %d, next %v, %v", n, next, err)
	}
	if n, _, err := h.e.PromoteDue(h.ctx, part, due, 10); err != nil || n != 1 {
		h.Fatalf("promote when due = %d, %v", n, err)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != "" {
		h.Fatalf("run woken = %+v; want queued, waiting for nothing", r)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 2 || st.Spec.Fails != 0 {
		h.Fatalf("start after the wait = %+v; want attempt 2, no failure", st)
	}
}

func waitForSignal(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	h.wait(d, st, engine.WaitSignalPrefix, time.Time{})
	if _, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID}); err != nil || !dues[0].IsZero() {
		h.Fatalf("due of a wait without a timeout = %v, %v; want none", dues, err)
	}
	part := h.partOf(p.RunID)
	if n, next, err := h.e.PromoteDue(h.ctx, part, h.now.Add(24*365*time.Hour), 10); err != nil || n != 0 || !next.IsZero() {
		h.Fatalf("promote of a wait without a timeout = %d, next %v, %v; want nothing due, ever", n, next, err)
	}
	// A run that sleeps is not woken by a signal.
	sleeper := h.params("t", "k2", engine.StrategyStatus)
	sd, sst := h.running(sleeper, "w")
	h.wait(sd, sst, "sleep until later", h.now.Add(time.Hour))

	for _, id := range []string{p.RunID, sleeper.RunID} {
		if r, err := h.e.SignalRun(h.ctx, id, "s1", []byte(`{"go":1}`), 0); err != nil || !r.Delivered {
			h.Fatalf("signal to %s = %+v, %v", id, r, err)
		}
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != "" {
		h.Fatalf("signalled run = %+v; want queued again", r)
	}
	if r := h.run(sleeper.RunID); r.Status != engine.StatusWaiting {
		h.Fatalf("signalled sleeper = %+v; want still waiting", r)
	}
	st2 := h.start("w", h.only(h.read("t", "w"), p.RunID))
	if !st2.Started || st2.Attempt != 2 {
		h.Fatalf("start after the signal = %+v", st2)
	}
	if sigs, err := h.e.ReadSignals(h.ctx, p.RunID, "", 10, -1); err != nil || len(sigs) != 1 || sigs[0].ID != "s1" {
		h.Fatalf("signals = %+v, %v", sigs, err)
	}
	if _, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID}); err != nil || !dues[0].IsZero() {
		h.Fatalf("the woken run is still in the retry set: due %v, %v", dues, err)
	}
}

func waitsAreNotDeliveries(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	p.MaxDeliveries = 2
	h.enqueue(p)
	part := h.partOf(p.RunID)
	for i := 1; i <= 4; i++ {
		d := h.only(h.read("t", "w"), p.RunID)
		st := h.start("w", d)
		if !st.Started || st.Attempt != i {
			h.Fatalf("start %d = %+v; want attempt %d, waits not counted as deliveries", i, st, i)
		}
		h.wait(d, st, "sleep", h.now)
		if n, _, err := h.e.PromoteDue(h.ctx, part, h.now, 10); err != nil || n != 1 {
			h.Fatalf("promote %d = %d, %v", i, n, err)
		}
	}
}

func waitCancelled(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	h.wait(d, st, engine.WaitSignalPrefix, h.now.Add(time.Hour))
	if r, err := h.e.Cancel(h.ctx, p.RunID, "no longer needed", h.now); err != nil || !r.Written {
		h.Fatalf("cancel of a waiting run = %+v, %v", r, err)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusCancelled {
		h.Fatalf("run = %+v; want cancelled", r)
	}
	if n, _, err := h.e.PromoteDue(h.ctx, h.partOf(p.RunID), h.now.Add(2*time.Hour), 10); err != nil || n != 0 {
		h.Fatalf("promote after the cancel = %d, %v; want nothing", n, err)
	}
	if _, held := h.key("k"); held {
		h.Fatal("key still held after the waiting run was cancelled")
	}
}

// A handler that waits before its attempt was begun (a short handler:
// see FinishParams.Began) begins it and waits in one write.
func waitBegun(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w")
	fp := h.outcome(d, engine.StartResult{Attempt: d.Spec.Attempts + 1, Spec: d.Spec}, engine.OutcomeWait, "sleep")
	fp.RetryAt, fp.Began, fp.Consumer = h.now.Add(time.Minute), h.now, "w"
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusWaiting {
		h.Fatalf("wait begun with its outcome = %+v", r)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusWaiting || r.Attempt != 1 || r.Consumer != "w" {
		h.Fatalf("run = %+v; want waiting after attempt 1 by w", r)
	}
}

// A signal that comes while the attempt runs, after its handler looked for
// one and before it waits, is not missed: the signal wait does not wait,
// and the run is queued again at once. The same holds for a handler that
// runs before its attempt is begun (the run still queued).
func waitSignalledBefore(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	if r, err := h.e.SignalRun(h.ctx, p.RunID, "s1", []byte(`1`), 0); err != nil || !r.Delivered {
		h.Fatalf("signal = %+v, %v", r, err)
	}
	fp := h.outcome(d, st, engine.OutcomeWait, engine.WaitSignalPrefix)
	fp.RetryAt = time.Time{}
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusQueued {
		h.Fatalf("wait after a signal came = %+v; want written, queued again", r)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 2 {
		h.Fatalf("start after the signal = %+v", st)
	}

	q := h.params("t", "k2", engine.StrategyStatus)
	qd := h.deliver(q, "w")
	if r, err := h.e.SignalRun(h.ctx, q.RunID, "s1", []byte(`1`), 0); err != nil || !r.Delivered {
		h.Fatalf("signal = %+v, %v", r, err)
	}
	qf := h.outcome(qd, engine.StartResult{Attempt: qd.Spec.Attempts + 1, Spec: qd.Spec}, engine.OutcomeWait, engine.WaitSignalPrefix)
	qf.RetryAt, qf.Began, qf.Consumer = time.Time{}, h.now, "w"
	if r := h.finish(qf); !r.Written || r.Status != engine.StatusQueued {
		h.Fatalf("wait begun with its outcome after a signal came = %+v; want queued again", r)
	}
	// A later attempt's wait waits: the wake was for attempt 1.
	d2 := h.only(h.read("t", "w"), q.RunID)
	st2 := h.start("w", d2)
	h.wait(d2, st2, engine.WaitSignalPrefix, time.Time{})
}

// Registrations are read per key, a run once per key however often it
// registered; forgetting removes what was read, but not a registration the
// run made since.
func eventWaiters(h *h) {
	a, b, c := h.id("run"), h.id("run"), h.id("run")
	for _, w := range []struct{ key, run string }{{"order.paid", a}, {"order.paid", b}, {"order.paid", a}, {"order.shipped", c}} {
		if err := h.e.AddEventWaiter(h.ctx, w.key, w.run, h.now); err != nil {
			h.Fatalf("add waiter %s of %s: %v", w.run, w.key, err)
		}
	}
	read := func(keys ...string) []engine.EventWaiter {
		h.Helper()
		ws, err := h.e.EventWaiters(h.ctx, keys)
		if err != nil {
			h.Fatalf("waiters of %v: %v", keys, err)
		}
		return ws
	}
	ws := read("order.paid", "order.none")
	got := make([]string, len(ws))
	for i, w := range ws {
		got[i] = w.RunID
		if w.EventKey != "order.paid" || !w.Since.Equal(h.now.Truncate(time.Millisecond)) || w.Registration == "" {
			h.Fatalf("waiter %+v; want of order.paid since %s", w, h.now)
		}
	}
	want := []string{a, b}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		h.Fatalf("waiters of order.paid = %v; want %v, each once", got, want)
	}
	// b registers again (a later look) after the read: forgetting what
	// was read keeps its newer registration.
	if err := h.e.AddEventWaiter(h.ctx, "order.paid", b, h.now.Add(time.Second)); err != nil {
		h.Fatal(err)
	}
	if err := h.e.ForgetEventWaiters(h.ctx, ws); err != nil {
		h.Fatal(err)
	}
	if left := read("order.paid"); len(left) != 1 || left[0].RunID != b || !left[0].Since.Equal(h.now.Add(time.Second).Truncate(time.Millisecond)) {
		h.Fatalf("waiters of order.paid after forgetting = %+v; want b's newer registration only", left)
	}
	if got := read("order.shipped"); len(got) != 1 || got[0].RunID != c {
		h.Fatalf("waiters of order.shipped = %+v", got)
	}
}

// A recoverer wakes the runs registered before an event of their key that
// is older than the grace period (their pusher died before waking them),
// counting an event up to the clock skew before the registration; it
// leaves alone a run registered after the key's last event and an event
// still within the grace, and forgets what it woke.
func recoverEventWaiters(h *h) {
	register := func(what, key string, at time.Time) engine.Delivery {
		h.Helper()
		p := h.params("t", h.id("k"), engine.StrategyStatus)
		d, st := h.running(p, "w")
		h.wait(d, st, engine.WaitEventPrefix+" "+key, time.Time{})
		if err := h.e.AddEventWaiter(h.ctx, key, p.RunID, at); err != nil {
			h.Fatalf("register %s: %v", what, err)
		}
		return d
	}
	t0 := h.now
	missed := register("missed", "invoice.paid", t0)
	skewed := register("skewed", "invoice.paid", t0.Add(engine.EventClockSkew/2))
	later := register("later", "invoice.paid", t0.Add(time.Minute))
	recent := register("recent", "invoice.sent", t0)
	ev := h.event("invoice.paid")
	ev.Now = t0.Add(time.Second)
	h.push(ev)
	ev2 := h.event("invoice.sent")
	ev2.Now = t0.Add(2 * time.Minute)
	h.push(ev2)

	now := t0.Add(2 * time.Minute).Add(time.Second)
	taken, woken, err := h.e.RecoverEventWaiters(h.ctx, now, engine.EventWakeGrace, 10)
	if err != nil || taken != 2 || woken != 2 {
		h.Fatalf("recovery = %d keys, %d woken, %v; want 2 keys, 2 woken", taken, woken, err)
	}
	for _, d := range []engine.Delivery{missed, skewed} {
		if r := h.run(d.RunID); r.Status != engine.StatusQueued {
			h.Fatalf("run registered before the event = %+v; want woken", r)
		}
	}
	for _, d := range []engine.Delivery{later, recent} {
		if r := h.run(d.RunID); r.Status != engine.StatusWaiting {
			h.Fatalf("run registered after the event, or whose event is recent = %+v; want still waiting", r)
		}
	}
	ws, err := h.e.EventWaiters(h.ctx, []string{"invoice.paid"})
	if err != nil || len(ws) != 1 || ws[0].RunID != later.RunID {
		h.Fatalf("registrations left = %+v, %v; want only the later one", ws, err)
	}
	// Past the grace of the second event, its waiter is woken; the later
	// registration of the first key still is not.
	if _, woken, err := h.e.RecoverEventWaiters(h.ctx, now.Add(engine.EventWakeGrace), engine.EventWakeGrace, 10); err != nil || woken != 1 {
		h.Fatalf("second recovery woke %d, %v; want 1", woken, err)
	}
	if r := h.run(recent.RunID); r.Status != engine.StatusQueued {
		h.Fatalf("waiter of the event past its grace = %+v; want woken", r)
	}
	// A key left without registrations leaves the recoverer's index.
	if taken, _, err := h.e.RecoverEventWaiters(h.ctx, now.Add(time.Hour), engine.EventWakeGrace, 10); err != nil || taken != 1 {
		h.Fatalf("third recovery looked at %d keys, %v; want 1 (the key with a registration left)", taken, err)
	}
}

func wakeRuns(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	h.wait(d, st, engine.WaitEventPrefix+" order.paid", h.now.Add(time.Hour))
	sleeper := h.params("t", "k2", engine.StrategyStatus)
	sd, sst := h.running(sleeper, "w")
	h.wait(sd, sst, "sleep until later", h.now.Add(time.Hour))
	done := h.params("t", "k3", engine.StrategyStatus)
	dd, dst := h.running(done, "w")
	h.finish(h.outcome(dd, dst, engine.OutcomeSucceeded, "{}"))

	if err := h.e.WakeRuns(h.ctx, []string{p.RunID, sleeper.RunID, done.RunID, h.id("missing")}); err != nil {
		h.Fatal(err)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != "" {
		h.Fatalf("woken event waiter = %+v; want queued", r)
	}
	if r := h.run(sleeper.RunID); r.Status != engine.StatusWaiting {
		h.Fatalf("woken sleeper = %+v; want still waiting", r)
	}
	if r := h.run(done.RunID); r.Status != engine.StatusSucceeded {
		h.Fatalf("woken ended run = %+v", r)
	}
	st2 := h.start("w", h.only(h.read("t", "w"), p.RunID))
	if !st2.Started || st2.Attempt != 2 {
		h.Fatalf("start of the woken run = %+v", st2)
	}
}

// A run waiting for its children (a workflow) is woken by WakeRuns before
// its due time; a wake that comes while its attempt runs, before it
// waits, ends that attempt's wait at once, as for a signal.
func wakeChildrenWait(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	h.wait(d, st, engine.WaitChildrenPrefix+" b, c", h.now.Add(time.Minute))
	if r := h.run(p.RunID); r.Waiting != engine.WaitChildrenPrefix+" b, c" {
		h.Fatalf("waiting for children = %+v", r)
	}
	if err := h.e.WakeRuns(h.ctx, []string{p.RunID}); err != nil {
		h.Fatal(err)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != "" {
		h.Fatalf("woken children wait = %+v; want queued", r)
	}
	if _, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID}); err != nil || !dues[0].IsZero() {
		h.Fatalf("due of the woken run = %v, %v; want none (out of the retry set)", dues, err)
	}
	d2 := h.only(h.read("t", "w"), p.RunID)
	st2 := h.start("w", d2)
	if err := h.e.WakeRuns(h.ctx, []string{p.RunID}); err != nil {
		h.Fatal(err)
	}
	fp := h.outcome(d2, st2, engine.OutcomeWait, engine.WaitChildrenPrefix)
	fp.RetryAt = h.now.Add(time.Minute)
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusQueued {
		h.Fatalf("children wait after a wake during its attempt = %+v; want queued again", r)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 3 {
		h.Fatalf("start after the wake = %+v", st)
	}
}
