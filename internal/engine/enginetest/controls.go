package enginetest

import (
	"fmt"
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var controlCases = []suiteCase{
	{"GroupHoldsMaxRunsAndHandsSlotsOnInLineOrder", groupInLine},
	{"SlotOfALapsedHolderIsGivenBack", groupLapsed},
	{"CancelStrategies", groupCancelStrategies},
	{"ConcurrentAcquiresHoldAtMostMaxRuns", groupConcurrent},
	{"ParkedRunWaitsOutOfItsQueueUntilUnparked", parked},
	{"GroupsOfATasksLimitsAreApart", groupsOfLimits},
	{"CancelledParkedRunIsNotQueuedAgain", parkedCancelled},
	{"RateLimitIsASlidingWindow", rateSliding},
	{"RateLimitUnitsAreTakenAndGivenBackTogether", rateUnits},
	{"RateLimitKeysAreIsolated", rateKeys},
	{"RateLimitTakeIsMeasuredByItsOwnLimit", rateOwnLimit},
	{"RateLimitWithoutATimeUsesTheStoresClock", rateServerClock},
	{"ConcurrentTakesTakeAtMostTheLimit", rateConcurrent},
	{"DeferHoldsARunBackWithoutAnAttempt", deferRuns},
	{"PauseAndResumeTask", pauseTask},
}

func (h *h) acquire(at time.Time, g, id, tok string, max int, strategy string) engine.AcquireResult {
	h.Helper()
	res, errs := h.e.AcquireSlots(h.ctx, at, []engine.AcquireParams{{
		Task: "t", Group: g, RunID: id, Token: tok, MaxRuns: max, Strategy: strategy, Lease: 10 * time.Second, Created: at,
	}})
	if errs[0] != nil {
		h.Fatalf("acquire %s: %v", id, errs[0])
	}
	return res[0]
}

func (h *h) releaseSlot(g, id, tok string, max int) engine.ReleaseResult {
	h.Helper()
	res, errs := h.e.ReleaseSlots(h.ctx, h.now, []engine.ReleaseParams{{
		Task: "t", Group: g, RunID: id, Token: tok, MaxRuns: max, Reserve: 10 * time.Second,
	}})
	if errs[0] != nil {
		h.Fatalf("release %s: %v", id, errs[0])
	}
	return res[0]
}

// holding says which of runs hold (or have reserved) a slot of group g.
func (h *h) holding(at time.Time, g string, runs ...string) []string {
	h.Helper()
	ps := make([]engine.ParkedRun, len(runs))
	for i, r := range runs {
		ps[i] = engine.ParkedRun{RunID: r, Task: "t", Group: g}
	}
	st, err := h.e.ParkedStates(h.ctx, at, ps)
	if err != nil || len(st) != len(runs) {
		h.Fatalf("parked states = %v, %v", st, err)
	}
	var out []string
	for i, s := range st {
		if s.Holding {
			out = append(out, runs[i])
		}
	}
	return out
}

// A group of MaxRuns 2 holds two runs; the third waits in line, once
// however often it asks; a release by a token that does not hold the slot
// frees nothing, and the holder's release reserves the slot for the run
// first in line, which then takes it over.
func groupInLine(h *h) {
	rr := engine.ConcurrencyRoundRobin
	for i, want := range []engine.AcquireOutcome{engine.AcquireHeld, engine.AcquireHeld, engine.AcquireWait, engine.AcquireWait} {
		id := fmt.Sprint("r", i+1)
		if r := h.acquire(h.now.Add(time.Duration(i)*time.Millisecond), "g", id, "w "+id, 2, rr); r.Outcome != want {
			h.Fatalf("acquire %s = %+v, want %s", id, r, want)
		}
	}
	if r := h.acquire(h.now.Add(5*time.Millisecond), "g", "r3", "w r3", 2, rr); r.Outcome != engine.AcquireWait || r.Holders != 2 {
		h.Fatalf("second ask of r3 = %+v", r)
	}
	if r := h.acquire(h.now.Add(6*time.Millisecond), "g", "r1", "w r1", 2, rr); r.Outcome != engine.AcquireHeld || r.Holders != 2 {
		h.Fatalf("r1 asking again = %+v", r)
	}
	if r := h.releaseSlot("g", "r1", "other", 2); r.Released || len(r.Next) != 0 {
		h.Fatalf("release with another token = %+v", r)
	}
	if r := h.releaseSlot("g", "r1", "w r1", 2); !r.Released || !slices.Equal(r.Next, []string{"r3"}) {
		h.Fatalf("release of r1 = %+v, want r3 next", r)
	}
	all := []string{"r1", "r2", "r3", "r4"}
	if got := h.holding(h.now, "g", all...); !slices.Equal(got, []string{"r2", "r3"}) {
		h.Fatalf("holding = %v, want r2 and r3 (reserved)", got)
	}
	if r := h.acquire(h.now.Add(7*time.Millisecond), "g", "r4", "w r4", 2, rr); r.Outcome != engine.AcquireWait {
		h.Fatalf("r4 = %+v, want wait behind the reservation", r)
	}
	if r := h.acquire(h.now.Add(8*time.Millisecond), "g", "r3", "w2 r3", 2, rr); r.Outcome != engine.AcquireHeld {
		h.Fatalf("r3 taking its reservation = %+v", r)
	}
	if r := h.releaseSlot("g", "r3", "", 2); r.Released {
		h.Fatalf("an empty token freed a slot taken over: %+v", r)
	}
	if r := h.releaseSlot("g", "r3", "w2 r3", 2); !r.Released || !slices.Equal(r.Next, []string{"r4"}) {
		h.Fatalf("release of r3 = %+v, want r4 next", r)
	}
	if r := h.releaseSlot("g", "r4", "", 2); !r.Released || len(r.Next) != 0 {
		h.Fatalf("release of r4's reservation = %+v", r)
	}
	if got := h.holding(h.now, "g", all...); !slices.Equal(got, []string{"r2"}) {
		h.Fatalf("holding = %v, want r2", got)
	}
	if r := h.acquire(h.now, "h", "r9", "w r9", 2, rr); r.Outcome != engine.AcquireHeld || r.Holders != 1 {
		h.Fatalf("another group = %+v", r)
	}
}

func groupLapsed(h *h) {
	rr := engine.ConcurrencyRoundRobin
	h.acquire(h.now, "g", "dead", "w1 dead", 1, rr)
	if r := h.acquire(h.now, "g", "r2", "w2 r2", 1, rr); r.Outcome != engine.AcquireWait {
		h.Fatalf("r2 = %+v, want wait", r)
	}
	renew := func(at time.Time, id, tok string) bool {
		res, errs := h.e.RenewSlots(h.ctx, at, []engine.RenewParams{{Task: "t", Group: "g", RunID: id, Token: tok, Lease: 10 * time.Second}})
		if errs[0] != nil {
			h.Fatal(errs[0])
		}
		return res[0]
	}
	if !renew(h.now.Add(time.Second), "dead", "w1 dead") || renew(h.now.Add(time.Second), "dead", "someone else") {
		h.Fatal("a renewal must hold for the holder's token only")
	}
	later := h.now.Add(12 * time.Second) // past the renewed lease
	if renew(later, "dead", "w1 dead") {
		h.Fatal("a lapsed slot was renewed")
	}
	res, errs := h.e.ReleaseSlots(h.ctx, later, []engine.ReleaseParams{{Task: "t", Group: "g", MaxRuns: 1, Reserve: 10 * time.Second}})
	if errs[0] != nil || res[0].Released || !slices.Equal(res[0].Next, []string{"r2"}) {
		h.Fatalf("release without a run after the lapse = %+v, %v; want r2 next", res, errs)
	}
	if got := h.holding(later, "g", "dead", "r2"); !slices.Equal(got, []string{"r2"}) {
		h.Fatalf("holding = %v, want r2", got)
	}
	if r := h.acquire(later.Add(11*time.Second), "g", "r3", "w3 r3", 1, rr); r.Outcome != engine.AcquireHeld {
		h.Fatalf("r3 after r2's reservation lapsed = %+v", r)
	}
}

// cancel_in_progress gives the slot of the oldest holder to the new run
// and names it; cancel_newest refuses the new run.
func groupCancelStrategies(h *h) {
	cip := engine.ConcurrencyCancelInProgress
	h.acquire(h.now, "g", "old", "w old", 2, cip)
	h.acquire(h.now.Add(time.Millisecond), "g", "mid", "w mid", 2, cip)
	if _, errs := h.e.RenewSlots(h.ctx, h.now, []engine.RenewParams{{Task: "t", Group: "g", RunID: "old", Token: "w old", Lease: time.Hour}}); errs[0] != nil {
		h.Fatal(errs[0])
	}
	r := h.acquire(h.now.Add(2*time.Millisecond), "g", "new", "w new", 2, cip)
	if r.Outcome != engine.AcquireEvict || r.Evicted != "old" {
		h.Fatalf("cancel_in_progress = %+v, want old evicted", r)
	}
	if got := h.holding(h.now, "g", "old", "mid", "new"); !slices.Equal(got, []string{"mid", "new"}) {
		h.Fatalf("holding = %v", got)
	}
	if r := h.releaseSlot("g", "old", "w old", 2); r.Released {
		h.Fatalf("the evicted run released a slot: %+v", r)
	}
	cn := engine.ConcurrencyCancelNewest
	h.acquire(h.now, "n", "first", "w first", 1, cn)
	if r := h.acquire(h.now, "n", "second", "w second", 1, cn); r.Outcome != engine.AcquireFull || r.Holders != 1 {
		h.Fatalf("cancel_newest = %+v, want full", r)
	}
	if got := h.holding(h.now, "n", "first", "second"); !slices.Equal(got, []string{"first"}) {
		h.Fatalf("holding = %v", got)
	}
}

func groupConcurrent(h *h) {
	const n, max = 16, 3
	res := make([]engine.AcquireResult, n)
	errs := make([]error, n)
	race(n, func(i int) {
		id := fmt.Sprint("r", i)
		rs, es := h.e.AcquireSlots(h.ctx, h.now, []engine.AcquireParams{{Task: "t", Group: "g", RunID: id, Token: id,
			MaxRuns: max, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: h.now}})
		res[i], errs[i] = rs[0], es[0]
	})
	held := 0
	for i := range n {
		if errs[i] != nil {
			h.Fatalf("acquire %d: %v", i, errs[i])
		}
		switch res[i].Outcome {
		case engine.AcquireHeld:
			held++
		case engine.AcquireWait:
		default:
			h.Fatalf("acquire %d = %+v", i, res[i])
		}
	}
	if held != max {
		h.Fatalf("%d of %d runs hold a slot of a group of %d", held, n, max)
	}
}

// A parked run is queued without a delivery and says why it waits; a
// later delivery of it is stale; unparking queues it again with the same
// attempts, and the recoverer's view (TakeParked, ParkedStates) follows.
func parked(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	d := h.deliver(p, "w")
	reason := `concurrency group "g" (1/1 running)`
	pp := []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: reason, Group: "g"}}
	res, errs := h.e.Park(h.ctx, h.now.Add(time.Second), pp)
	if errs[0] != nil || res[0] != engine.ParkHeldBack {
		h.Fatalf("park = %q, %v", res[0], errs[0])
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != reason || r.ConcurrencyGroup != "g" || r.Attempt != 0 {
		h.Fatalf("parked run = %+v", r)
	}
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"].Queued != 0 || q["t"].InFlight != 0 {
		h.Fatalf("queue of a parked run = %+v, %v; want empty", q, err)
	}
	if res, _ := h.e.Park(h.ctx, h.now, pp); res[0] != "stale" {
		h.Fatalf("second park = %q, want stale", res[0])
	}
	part := h.partOf(p.RunID)
	if got, err := h.e.TakeParked(h.ctx, part, h.now, h.now.Add(time.Minute), 10); err != nil || len(got) != 0 {
		h.Fatalf("take before due = %v, %v", got, err)
	}
	got, err := h.e.TakeParked(h.ctx, part, h.now.Add(time.Second), h.now.Add(time.Minute), 10)
	if err != nil || len(got) != 1 || got[0] != (engine.ParkedRun{RunID: p.RunID, Task: "t", Group: "g"}) {
		h.Fatalf("take when due = %v, %v", got, err)
	}
	if again, _ := h.e.TakeParked(h.ctx, part, h.now.Add(2*time.Second), h.now.Add(time.Minute), 10); len(again) != 0 {
		h.Fatalf("taken again before its next look: %v", again)
	}
	if st, err := h.e.ParkedStates(h.ctx, h.now, got); err != nil || st[0] != (engine.ParkedState{}) {
		h.Fatalf("state before the group knows it = %v, %v", st, err)
	}
	h.acquire(h.now, "g", "holder", "w holder", 1, engine.ConcurrencyRoundRobin)
	if r := h.acquire(h.now, "g", p.RunID, "w x", 1, engine.ConcurrencyRoundRobin); r.Outcome != engine.AcquireWait {
		h.Fatalf("acquire = %+v", r)
	}
	if st, err := h.e.ParkedStates(h.ctx, h.now, got); err != nil || st[0] != (engine.ParkedState{Waiting: true}) {
		h.Fatalf("state while waiting = %+v, %v", st, err)
	}
	h.releaseSlot("g", "holder", "w holder", 1)
	if st, err := h.e.ParkedStates(h.ctx, h.now, got); err != nil || st[0] != (engine.ParkedState{Holding: true}) {
		h.Fatalf("state once reserved = %+v, %v", st, err)
	}
	if st, err := h.e.ParkedStates(h.ctx, h.now.Add(time.Minute), got); err != nil || st[0] != (engine.ParkedState{}) {
		h.Fatalf("state once the reservation lapsed = %+v, %v", st, err)
	}
	up, errs := h.e.Unpark(h.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}, {RunID: "no-such-run", Task: "t"}})
	if errs[0] != nil || errs[1] != nil || up[0] != engine.UnparkQueued || up[1] != engine.UnparkMissing {
		h.Fatalf("unpark = %q, %v", up, errs)
	}
	if r := h.run(p.RunID); r.Waiting != "" || r.ConcurrencyGroup != "" || r.Status != engine.StatusQueued {
		h.Fatalf("unparked run = %+v", r)
	}
	if up, _ := h.e.Unpark(h.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); up[0] != engine.UnparkNotParked {
		h.Fatalf("second unpark = %q", up[0])
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 1 {
		h.Fatalf("start after unpark = %+v, want attempt 1", st)
	}
}

func parkedCancelled(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w")
	if res, errs := h.e.Park(h.ctx, h.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "r", Group: "g"}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
		h.Fatalf("park = %v %v", res, errs)
	}
	if r, err := h.e.Cancel(h.ctx, p.RunID, "no longer wanted", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	if _, held := h.key("k"); held {
		h.Fatal("the cancelled parked run's key is held")
	}
	if got, err := h.e.TakeParked(h.ctx, h.partOf(p.RunID), h.now, h.now.Add(time.Minute), 10); err != nil || len(got) != 0 {
		h.Fatalf("take = %v, %v", got, err)
	}
	if up, _ := h.e.Unpark(h.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); up[0] != engine.StatusCancelled {
		h.Fatalf("unpark of a cancelled run = %q", up[0])
	}
	if ds := h.read("t", "w"); len(ds) != 0 {
		h.Fatalf("a cancelled parked run was delivered: %+v", ds)
	}
}

func (h *h) take(now time.Time, r engine.RateTake) engine.RateTakeResult {
	h.Helper()
	res, errs := h.e.TakeRateLimits(h.ctx, now, []engine.RateTake{r})
	if errs[0] != nil {
		h.Fatalf("take %+v: %v", r, errs[0])
	}
	return res[0]
}

func perSecond(limit, units int, token string) engine.RateTake {
	return engine.RateTake{Name: "emails", Limit: limit, Period: time.Second, Units: units, Token: token}
}

// At most limit units in any window of one period, a unit leaving one
// period after it was taken: a count per fixed window would let the
// second burst through.
func rateSliding(h *h) {
	t0 := time.UnixMicro(time.Now().UnixMicro())
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	for i := 1; i <= 3; i++ {
		if r := h.take(at(900*time.Millisecond), perSecond(3, 1, fmt.Sprint("a", i))); !r.Taken || r.Used != i {
			h.Fatalf("take %d of 3 = %+v", i, r)
		}
	}
	if r := h.take(at(1100*time.Millisecond), perSecond(3, 1, "b")); r.Taken || r.Wait != 800*time.Millisecond {
		h.Fatalf("take across a fixed window's boundary = %+v; want refused, wait 800ms", r)
	}
	if r := h.take(at(1900*time.Millisecond-time.Microsecond), perSecond(3, 1, "b")); r.Taken || r.Wait != time.Microsecond {
		h.Fatalf("take a microsecond early = %+v; want refused, wait 1µs", r)
	}
	if r := h.take(at(1900*time.Millisecond), perSecond(3, 1, "b")); !r.Taken || r.Used != 1 {
		h.Fatalf("take once the units left = %+v; want taken, 1 used", r)
	}
}

func rateUnits(h *h) {
	t0 := time.UnixMicro(time.Now().UnixMicro())
	if r := h.take(t0, perSecond(5, 2, "a")); !r.Taken || r.Used != 2 {
		h.Fatalf("first 2 of 5 = %+v", r)
	}
	if r := h.take(t0.Add(100*time.Millisecond), perSecond(5, 2, "b")); !r.Taken || r.Used != 4 {
		h.Fatalf("next 2 of 5 = %+v", r)
	}
	if r := h.take(t0.Add(200*time.Millisecond), perSecond(5, 2, "c")); r.Taken || r.Wait != 800*time.Millisecond {
		h.Fatalf("2 more of 5 = %+v; want refused, wait 800ms", r)
	}
	back := []engine.RateTake{perSecond(5, 2, "a")}
	if n, errs := h.e.ReturnRateLimits(h.ctx, back); errs[0] != nil || n[0] != 2 {
		h.Fatalf("give a's units back = %v, %v; want 2", n, errs)
	}
	if n, errs := h.e.ReturnRateLimits(h.ctx, back); errs[0] != nil || n[0] != 0 {
		h.Fatalf("give a's units back again = %v, %v; want 0", n, errs)
	}
	if r := h.take(t0.Add(200*time.Millisecond), perSecond(5, 2, "c")); !r.Taken || r.Used != 4 {
		h.Fatalf("2 of 5 once a's are back = %+v", r)
	}
}

func rateKeys(h *h) {
	var reqs []engine.RateTake
	for _, key := range []string{"acme", "acme", "globex", "initech", "umbrella"} {
		reqs = append(reqs, engine.RateTake{Name: "emails", Key: key, Limit: 1, Period: time.Minute, Units: 1, Token: fmt.Sprint("t", len(reqs))})
	}
	res, errs := h.e.TakeRateLimits(h.ctx, time.Now(), reqs)
	for i, r := range res {
		if errs[i] != nil {
			h.Fatalf("request %d: %v", i, errs[i])
		}
		if want := i != 1; r.Taken != want {
			h.Fatalf("request %d on key %q = %+v; want taken %v (one unit per key)", i, reqs[i].Key, r, want)
		}
	}
	for _, key := range []string{"acme", "globex", "other"} {
		want := 1
		if key == "other" {
			want = 0
		}
		if n, err := h.e.RateLimitUse(h.ctx, "emails", key, time.Minute); err != nil || n != want {
			h.Fatalf("use of key %q = %d, %v; want %d", key, n, err, want)
		}
	}
}

// Without a time of its own a take measures by the store's clock.
func rateServerClock(h *h) {
	hour := engine.RateTake{Name: "reports", Limit: 1, Period: time.Hour, Units: 1, Token: "a"}
	if r := h.take(time.Time{}, hour); !r.Taken {
		h.Fatalf("first = %+v", r)
	}
	hour.Token = "b"
	if r := h.take(time.Time{}, hour); r.Taken || r.Wait <= 59*time.Minute || r.Wait > time.Hour {
		h.Fatalf("second within the hour = %+v; want refused, wait just under 1h", r)
	}
	if n, err := h.e.RateLimitUse(h.ctx, "reports", "", time.Hour); err != nil || n != 1 {
		h.Fatalf("use = %d, %v; want 1", n, err)
	}
}

func rateConcurrent(h *h) {
	const n, limit = 16, 5
	taken := make([]bool, n)
	errs := make([]error, n)
	now := time.Now()
	race(n, func(i int) {
		res, es := h.e.TakeRateLimits(h.ctx, now, []engine.RateTake{{Name: "hot", Limit: limit, Period: time.Minute, Units: 1, Token: fmt.Sprint("t", i)}})
		taken[i], errs[i] = res[0].Taken, es[0]
	})
	count := 0
	for i := range n {
		if errs[i] != nil {
			h.Fatalf("take %d: %v", i, errs[i])
		}
		if taken[i] {
			count++
		}
	}
	if count != limit {
		h.Fatalf("%d of %d takes succeeded against a limit of %d", count, n, limit)
	}
}

// A deferred run waits out of its queue, queued with its reason and no
// attempt, and is queued again when due, its next start its first
// attempt; a delivery of a run that moved on is dropped.
func deferRuns(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d := h.deliver(p, "w")
	due := h.now.Add(time.Second)
	res, errs := h.e.DeferRuns(h.ctx, []engine.Deferral{{Delivery: d, Due: due, Reason: `rate limit "emails"`}})
	if errs[0] != nil || !res[0].Held {
		h.Fatalf("defer = %+v, %v", res, errs)
	}
	if r := h.run(p.RunID); r.Status != engine.StatusQueued || r.Waiting != `rate limit "emails"` || r.Attempt != 0 {
		h.Fatalf("held run = %+v", r)
	}
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"] != (engine.QueueStat{}) {
		h.Fatalf("queue of a deferred run = %+v, %v; want empty", q, err)
	}
	if n := h.promote(due.Add(-time.Millisecond)); n != 0 {
		h.Fatalf("promoted %d before due", n)
	}
	if n := h.promote(due); n != 1 {
		h.Fatalf("promoted %d when due", n)
	}
	if r := h.run(p.RunID); r.Waiting != "" || r.Status != engine.StatusQueued {
		h.Fatalf("queued again = %+v", r)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 1 {
		h.Fatalf("start after the wait = %+v; want attempt 1", st)
	}
	c := h.params("t", "k3", engine.StrategyStatus)
	dc := h.deliver(c, "w")
	// A delivery whose run was queued again since (given back by its
	// worker) is stale.
	q := h.params("t", "k2", engine.StrategyStatus)
	stale, st := h.running(q, "w")
	if r, err := h.e.Requeue(h.ctx, q.RunID, "t", st.Attempt); err != nil || !r.Written {
		h.Fatalf("requeue = %+v, %v", r, err)
	}
	if _, err := h.e.Cancel(h.ctx, c.RunID, "no longer wanted", h.now); err != nil {
		h.Fatal(err)
	}
	res, errs = h.e.DeferRuns(h.ctx, []engine.Deferral{{Delivery: stale, Due: due}, {Delivery: dc, Due: due}})
	if errs[0] != nil || errs[1] != nil || res[0].Held || res[0].Reason != "stale" || res[1].Held || res[1].Reason != engine.StatusCancelled {
		h.Fatalf("defer of a stale and a cancelled delivery = %+v, %v", res, errs)
	}
	if r := h.run(q.RunID); r.Waiting != "" {
		h.Fatalf("a stale delivery held its run back: %+v", r)
	}
}

// A pause is kept per task, with when it was first made; a resume removes
// it; another namespace sees none of it.
func pauseTask(h *h) {
	at := h.now
	if was, err := h.e.PauseTask(h.ctx, "emails", at); err != nil || !was {
		h.Fatalf("pause = %v, %v", was, err)
	}
	if was, err := h.e.PauseTask(h.ctx, "emails", at.Add(time.Minute)); err != nil || was {
		h.Fatalf("second pause = %v, %v", was, err)
	}
	if _, err := h.e.PauseTask(h.ctx, "reports", at); err != nil {
		h.Fatal(err)
	}
	if m, err := h.e.PausedTasks(h.ctx); err != nil || len(m) != 2 || !m["emails"].Equal(at) || !m["reports"].Equal(at) {
		h.Fatalf("paused = %v, %v", m, err)
	}
	if m, err := h.open(h.T).PausedTasks(h.ctx); err != nil || len(m) != 0 {
		h.Fatalf("another namespace's paused = %v, %v", m, err)
	}
	if was, err := h.e.ResumeTask(h.ctx, "emails"); err != nil || !was {
		h.Fatalf("resume = %v, %v", was, err)
	}
	if was, err := h.e.ResumeTask(h.ctx, "emails"); err != nil || was {
		h.Fatalf("second resume = %v, %v", was, err)
	}
	if m, err := h.e.PausedTasks(h.ctx); err != nil || len(m) != 1 || !m["reports"].Equal(at) {
		h.Fatalf("after resume = %v, %v", m, err)
	}
}

// The groups of two concurrency limits of one task are apart even where
// their names are the same; a run parked in the second limit's group says
// so to the recoverer (TakeParked, ParkedStates), and no longer once it is
// parked in the first's.
func groupsOfLimits(h *h) {
	rr := engine.ConcurrencyRoundRobin
	ask := func(index int, id string) engine.AcquireResult {
		res, errs := h.e.AcquireSlots(h.ctx, h.now, []engine.AcquireParams{{Task: "t", Group: "g", Index: index, RunID: id, Token: "w " + id,
			MaxRuns: 1, Strategy: rr, Lease: 10 * time.Second, Created: h.now}})
		if errs[0] != nil {
			h.Fatalf("acquire %s in limit %d: %v", id, index, errs[0])
		}
		return res[0]
	}
	// A run first, so that the namespace's partitions are known.
	p := h.params("t", "", engine.StrategyNone)
	d := h.deliver(p, "w")
	if r := ask(0, "r1"); r.Outcome != engine.AcquireHeld {
		h.Fatalf("r1 in the first limit's group = %+v", r)
	}
	if r := ask(1, "r2"); r.Outcome != engine.AcquireHeld || r.Holders != 1 {
		h.Fatalf("r2 in the second limit's group of the same name = %+v, want held apart", r)
	}
	if r := ask(1, p.RunID); r.Outcome != engine.AcquireWait {
		h.Fatalf("a third run in the second limit's group = %+v, want wait", r)
	}
	if res, errs := h.e.Park(h.ctx, h.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "r", Group: "g", Index: 1}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
		h.Fatalf("park = %v %v", res, errs)
	}
	part := h.partOf(p.RunID)
	got, err := h.e.TakeParked(h.ctx, part, h.now, h.now.Add(time.Second), 10)
	if err != nil || len(got) != 1 || got[0] != (engine.ParkedRun{RunID: p.RunID, Task: "t", Group: "g", Index: 1}) {
		h.Fatalf("take = %+v, %v; want the run parked in the second limit's group", got, err)
	}
	first := []engine.ParkedRun{{RunID: p.RunID, Task: "t", Group: "g"}}
	if st, err := h.e.ParkedStates(h.ctx, h.now, append(got, first...)); err != nil || st[0] != (engine.ParkedState{Waiting: true}) || st[1] != (engine.ParkedState{}) {
		h.Fatalf("states = %+v, %v; want waiting in the second limit's group only", st, err)
	}
	res, errs := h.e.ReleaseSlots(h.ctx, h.now, []engine.ReleaseParams{{Task: "t", Group: "g", Index: 1, RunID: "r2", Token: "w r2", MaxRuns: 1, Reserve: 10 * time.Second}})
	if errs[0] != nil || !res[0].Released || !slices.Equal(res[0].Next, []string{p.RunID}) {
		h.Fatalf("release in the second limit's group = %+v, %v", res, errs)
	}
	if r := ask(0, "r3"); r.Outcome != engine.AcquireWait {
		h.Fatalf("the first limit's group, still held by r1 = %+v", r)
	}
	if up, errs := h.e.Unpark(h.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); errs[0] != nil || up[0] != engine.UnparkQueued {
		h.Fatalf("unpark = %v, %v", up, errs)
	}
	d = h.only(h.read("t", "w"), p.RunID)
	if res, errs := h.e.Park(h.ctx, h.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "r", Group: "g"}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
		h.Fatalf("park again = %v %v", res, errs)
	}
	if got, err := h.e.TakeParked(h.ctx, part, h.now.Add(time.Second), h.now.Add(time.Minute), 10); err != nil || len(got) != 1 || got[0] != first[0] {
		h.Fatalf("take = %+v, %v; want the run parked in the first limit's group", got, err)
	}
}

// Each take is measured by the limit it carries, so runs of one log may
// disagree: 3 units of a limit of 5 are taken, 3 more of 5 are refused,
// 3 more of a limit of 10 are taken (6 in the log), and 1 more of 5 is
// refused until enough leave.
func rateOwnLimit(h *h) {
	take := func(units, limit int, token string) engine.RateTakeResult {
		return h.take(h.now, engine.RateTake{Name: "exports", Limit: limit, Period: time.Second, Units: units, Token: token})
	}
	if r := take(3, 5, "a"); !r.Taken || r.Used != 3 {
		h.Fatalf("3 of 5 = %+v", r)
	}
	if r := take(3, 5, "b"); r.Taken || r.Wait <= 0 {
		h.Fatalf("3 more of 5 = %+v, want refused", r)
	}
	if r := take(3, 10, "c"); !r.Taken || r.Used != 6 {
		h.Fatalf("3 more of 10 = %+v, want taken", r)
	}
	if r := take(1, 5, "d"); r.Taken {
		h.Fatalf("1 of 5 with 6 taken = %+v, want refused", r)
	}
}
