package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// acquire asks for a slot of task t's group g for run id with token tok.
func (f *fixture) acquire(at time.Time, g, id, tok string, max int, strategy string) engine.AcquireResult {
	f.t.Helper()
	res, errs := f.s.AcquireSlots(f.ctx, at, []engine.AcquireParams{{
		Task: "t", Group: g, RunID: id, Token: tok, MaxRuns: max, Strategy: strategy, Lease: 10 * time.Second, Created: at,
	}})
	if errs[0] != nil {
		f.t.Fatalf("acquire %s: %v", id, errs[0])
	}
	return res[0]
}

func (f *fixture) releaseSlot(at time.Time, g, id, tok string, max int) engine.ReleaseResult {
	f.t.Helper()
	res, errs := f.s.ReleaseSlots(f.ctx, at, []engine.ReleaseParams{{
		Task: "t", Group: g, RunID: id, Token: tok, MaxRuns: max, Reserve: 10 * time.Second,
	}})
	if errs[0] != nil {
		f.t.Fatalf("release %s: %v", id, errs[0])
	}
	return res[0]
}

func (f *fixture) holders(g string) []string {
	f.t.Helper()
	ks, err := f.s.ConcurrencyKeys(f.ctx, "t", g)
	if err != nil {
		f.t.Fatal(err)
	}
	hs, err := f.b.Client.ZRange(f.ctx, ks.ConcurrencyHolders("t", g), 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	slices.Sort(hs)
	return hs
}

// A group of MaxRuns 2 holds two runs; the third waits in line, once
// however often it asks; a release by a token that does not hold the slot
// frees nothing, and the holder's release reserves the slot for the run
// first in line, which then takes it over.
func TestConcurrencyGroupHoldsMaxRunsAndHandsSlotsOnInLineOrder(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		rr := engine.ConcurrencyRoundRobin
		for i, want := range []engine.AcquireOutcome{engine.AcquireHeld, engine.AcquireHeld, engine.AcquireWait, engine.AcquireWait} {
			id := fmt.Sprintf("r%d", i+1)
			if r := f.acquire(f.now.Add(time.Duration(i)*time.Millisecond), "g", id, "w "+id, 2, rr); r.Outcome != want {
				t.Fatalf("acquire %s = %+v, want %s", id, r, want)
			}
		}
		// r3 asks again: still one place in line.
		if r := f.acquire(f.now.Add(5*time.Millisecond), "g", "r3", "w r3", 2, rr); r.Outcome != engine.AcquireWait || r.Holders != 2 {
			t.Fatalf("second ask of r3 = %+v", r)
		}
		// r1 asks again with its token (a redelivery to the same worker): it still holds.
		if r := f.acquire(f.now.Add(6*time.Millisecond), "g", "r1", "w r1", 2, rr); r.Outcome != engine.AcquireHeld || r.Holders != 2 {
			t.Fatalf("r1 asking again = %+v", r)
		}
		if r := f.releaseSlot(f.now, "g", "r1", "other", 2); r.Released || len(r.Next) != 0 {
			t.Fatalf("release with another token = %+v, want nothing", r)
		}
		r := f.releaseSlot(f.now, "g", "r1", "w r1", 2)
		if !r.Released || !slices.Equal(r.Next, []string{"r3"}) {
			t.Fatalf("release of r1 = %+v, want released and r3 next", r)
		}
		if got := f.holders("g"); !slices.Equal(got, []string{"r2", "r3"}) {
			t.Fatalf("holders = %v, want r2 and r3 (reserved)", got)
		}
		// r4 cannot jump the reservation; r3 takes it over.
		if r := f.acquire(f.now.Add(7*time.Millisecond), "g", "r4", "w r4", 2, rr); r.Outcome != engine.AcquireWait {
			t.Fatalf("r4 = %+v, want wait", r)
		}
		if r := f.acquire(f.now.Add(8*time.Millisecond), "g", "r3", "w2 r3", 2, rr); r.Outcome != engine.AcquireHeld {
			t.Fatalf("r3 taking its reservation = %+v", r)
		}
		// A reserved slot given back with the empty token moves the line on.
		if r := f.releaseSlot(f.now, "g", "r3", "", 2); r.Released {
			t.Fatalf("r3 was taken over: an empty token must not free it (%+v)", r)
		}
		if r := f.releaseSlot(f.now, "g", "r3", "w2 r3", 2); !r.Released || !slices.Equal(r.Next, []string{"r4"}) {
			t.Fatalf("release of r3 = %+v, want r4 next", r)
		}
		if r := f.releaseSlot(f.now, "g", "r4", "", 2); !r.Released || len(r.Next) != 0 {
			t.Fatalf("release of r4's reservation = %+v", r)
		}
		if got := f.holders("g"); !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("holders = %v, want r2", got)
		}
		// Another group of the same task has slots of its own.
		if r := f.acquire(f.now, "h", "r9", "w r9", 2, rr); r.Outcome != engine.AcquireHeld || r.Holders != 1 {
			t.Fatalf("group h = %+v", r)
		}
	})
}

// A holder whose lease lapsed loses its slot to the next run that asks,
// and a release without a run hands lapsed slots to waiting runs; a lapsed
// holder cannot renew.
func TestConcurrencySlotOfALapsedHolderIsGivenBack(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		rr := engine.ConcurrencyRoundRobin
		f.acquire(f.now, "g", "dead", "w1 dead", 1, rr)
		if r := f.acquire(f.now, "g", "r2", "w2 r2", 1, rr); r.Outcome != engine.AcquireWait {
			t.Fatalf("r2 = %+v, want wait", r)
		}
		renew := func(at time.Time, id, tok string) bool {
			res, errs := f.s.RenewSlots(f.ctx, at, []engine.RenewParams{{Task: "t", Group: "g", RunID: id, Token: tok, Lease: 10 * time.Second}})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			return res[0]
		}
		if !renew(f.now.Add(time.Second), "dead", "w1 dead") || renew(f.now.Add(time.Second), "dead", "someone else") {
			t.Fatal("renewal must hold for the token only")
		}
		later := f.now.Add(12 * time.Second) // past the renewed lease
		if renew(later, "dead", "w1 dead") {
			t.Fatal("a lapsed slot was renewed")
		}
		r := f.releaseSlot(later, "g", "", "", 1)
		if r.Released || !slices.Equal(r.Next, []string{"r2"}) {
			t.Fatalf("release without a run after the lapse = %+v, want r2 next", r)
		}
		if got := f.holders("g"); !slices.Equal(got, []string{"r2"}) {
			t.Fatalf("holders = %v, want r2", got)
		}
		// The same through acquire: r2's reservation lapses, r3 gets the slot.
		if r := f.acquire(later.Add(11*time.Second), "g", "r3", "w3 r3", 1, rr); r.Outcome != engine.AcquireHeld {
			t.Fatalf("r3 after r2's reservation lapsed = %+v", r)
		}
	})
}

// cancel_in_progress gives the slot of the oldest holder to the new run
// and names it; cancel_newest refuses the new run and writes nothing.
func TestConcurrencyCancelStrategies(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		cip := engine.ConcurrencyCancelInProgress
		f.acquire(f.now, "g", "old", "w old", 2, cip)
		f.acquire(f.now.Add(time.Millisecond), "g", "mid", "w mid", 2, cip)
		// Renewing mid does not make it the older one.
		if _, errs := f.s.RenewSlots(f.ctx, f.now, []engine.RenewParams{{Task: "t", Group: "g", RunID: "old", Token: "w old", Lease: time.Hour}}); errs[0] != nil {
			t.Fatal(errs[0])
		}
		r := f.acquire(f.now.Add(2*time.Millisecond), "g", "new", "w new", 2, cip)
		if r.Outcome != engine.AcquireEvict || r.Evicted != "old" {
			t.Fatalf("cancel_in_progress = %+v, want old evicted", r)
		}
		if got := f.holders("g"); !slices.Equal(got, []string{"mid", "new"}) {
			t.Fatalf("holders = %v", got)
		}
		// The evicted run's release frees nothing.
		if r := f.releaseSlot(f.now, "g", "old", "w old", 2); r.Released {
			t.Fatalf("evicted run released a slot: %+v", r)
		}

		cn := engine.ConcurrencyCancelNewest
		f.acquire(f.now, "n", "first", "w first", 1, cn)
		if r := f.acquire(f.now, "n", "second", "w second", 1, cn); r.Outcome != engine.AcquireFull || r.Holders != 1 {
			t.Fatalf("cancel_newest = %+v, want full", r)
		}
		if got := f.holders("n"); !slices.Equal(got, []string{"first"}) {
			t.Fatalf("holders = %v", got)
		}
	})
}

// A parked run is queued without a delivery, says why it waits and is in
// the parked index; a later delivery of it is stale; unparking puts it
// back in its stream with a new entry and the same attempt count, and the
// recoverer's view (TakeParked, ParkedStates) follows it.
func TestParkedRunWaitsOutOfItsStreamUntilUnparked(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "", engine.StrategyNone)
		d := f.delivered(p)
		reason := `concurrency group "g" (1/1 running)`
		res, errs := f.s.Park(f.ctx, f.now.Add(time.Second), []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: reason, Group: "g"}})
		if errs[0] != nil || res[0] != engine.ParkHeldBack {
			t.Fatalf("park = %q, %v", res[0], errs[0])
		}
		rec := f.b.Client.HGetAll(f.ctx, f.k.Run(p.RunID)).Val()
		if rec["status"] != "queued" || rec["entry"] != "" || rec["waiting"] != reason || rec["cgroup"] != "g" || rec["attempt"] != "" {
			t.Fatalf("parked record = %v", rec)
		}
		if r, err := f.s.GetRun(f.ctx, p.RunID); err != nil || r.Waiting != reason || r.ConcurrencyGroup != "g" {
			t.Fatalf("GetRun of a parked run = %+v, %v", r, err)
		}
		if n := f.b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("stream holds %d entries, want none", n)
		}
		// Parking the same delivery again: stale, nothing changes.
		if res, _ := f.s.Park(f.ctx, f.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: reason, Group: "g"}}); res[0] != "stale" {
			t.Fatalf("second park = %q, want stale", res[0])
		}
		// Not due yet; then due, and re-scored.
		if got, err := f.s.TakeParked(f.ctx, 0, f.now, f.now.Add(time.Minute), 10); err != nil || len(got) != 0 {
			t.Fatalf("take before due = %v, %v", got, err)
		}
		got, err := f.s.TakeParked(f.ctx, 0, f.now.Add(time.Second), f.now.Add(time.Minute), 10)
		if err != nil || len(got) != 1 || got[0] != (engine.ParkedRun{RunID: p.RunID, Task: "t", Group: "g"}) {
			t.Fatalf("take when due = %v, %v", got, err)
		}
		if got, _ := f.s.TakeParked(f.ctx, 0, f.now.Add(2*time.Second), f.now.Add(time.Minute), 10); len(got) != 0 {
			t.Fatalf("taken again before its next look: %v", got)
		}
		// Neither waiting nor holding in its group: a recoverer would unpark it.
		states, err := f.s.ParkedStates(f.ctx, f.now, got)
		if err != nil || len(states) != 1 || states[0] != (engine.ParkedState{}) {
			t.Fatalf("states before the group knows it = %v, %v", states, err)
		}
		f.acquire(f.now, "g", "holder", "w holder", 1, engine.ConcurrencyRoundRobin)
		if r := f.acquire(f.now, "g", p.RunID, "w x", 1, engine.ConcurrencyRoundRobin); r.Outcome != engine.AcquireWait {
			t.Fatalf("acquire = %+v", r)
		}
		pr := []engine.ParkedRun{{RunID: p.RunID, Task: "t", Group: "g"}}
		if st, err := f.s.ParkedStates(f.ctx, f.now, pr); err != nil || st[0] != (engine.ParkedState{Waiting: true}) {
			t.Fatalf("state while waiting = %+v, %v", st, err)
		}
		f.releaseSlot(f.now, "g", "holder", "w holder", 1)
		if st, err := f.s.ParkedStates(f.ctx, f.now, pr); err != nil || st[0] != (engine.ParkedState{Holding: true}) {
			t.Fatalf("state once reserved = %+v, %v", st, err)
		}
		if st, err := f.s.ParkedStates(f.ctx, f.now.Add(time.Minute), pr); err != nil || st[0] != (engine.ParkedState{}) {
			t.Fatalf("state once the reservation lapsed = %+v, %v", st, err)
		}

		up, errs := f.s.Unpark(f.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}})
		if errs[0] != nil || up[0] != engine.UnparkQueued {
			t.Fatalf("unpark = %q, %v", up[0], errs[0])
		}
		rec = f.b.Client.HGetAll(f.ctx, f.k.Run(p.RunID)).Val()
		if _, ok := rec["waiting"]; ok || rec["cgroup"] != "" || rec["entry"] == "" || rec["status"] != "queued" {
			t.Fatalf("unparked record = %v", rec)
		}
		if n := f.b.Client.ZCard(f.ctx, f.k.Parked()).Val(); n != 0 {
			t.Fatalf("parked index holds %d", n)
		}
		if up, _ := f.s.Unpark(f.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); up[0] != engine.UnparkNotParked {
			t.Fatalf("second unpark = %q", up[0])
		}
		// Its next delivery is its first attempt: parking counted none.
		ds := f.read("t", "w")
		if len(ds) != 1 || ds[0].RunID != p.RunID {
			t.Fatalf("read after unpark = %+v", ds)
		}
		if st := f.start(ds[0], "w"); !st.Started || st.Attempt != 1 {
			t.Fatalf("start after unpark = %+v, want attempt 1", st)
		}
	})
}

// A parked run that is cancelled meanwhile leaves the index when it is
// unparked or taken, and is not queued again.
func TestCancelledParkedRunIsNotQueuedAgain(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		d := f.delivered(p)
		if res, errs := f.s.Park(f.ctx, f.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "r", Group: "g"}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
			t.Fatalf("park = %v %v", res, errs)
		}
		if r, err := f.s.Cancel(f.ctx, p.RunID, "no longer wanted", f.now); err != nil || !r.Written {
			t.Fatalf("cancel = %+v, %v", r, err)
		}
		if f.exists(f.k.IdempotencyKey("k")) {
			t.Fatal("the cancelled parked run's key is still held")
		}
		if got, err := f.s.TakeParked(f.ctx, 0, f.now, f.now.Add(time.Minute), 10); err != nil || len(got) != 0 {
			t.Fatalf("take = %v, %v", got, err)
		}
		if up, _ := f.s.Unpark(f.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); up[0] != engine.StatusCancelled {
			t.Fatalf("unpark of a cancelled run = %q", up[0])
		}
		if n := f.b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("stream holds %d entries", n)
		}
	})
}

// On a namespace of several partitions every script call touches one slot
// (the cluster backend fails any CROSSSLOT): groups of one call spread
// over partitions, runs of one call too.
func TestConcurrencyScriptsOnManyPartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 8)
		ctx := context.Background()
		now := time.Now()
		var ps []engine.AcquireParams
		var rs []engine.ReleaseParams
		var ns []engine.RenewParams
		for i := range 40 {
			g := fmt.Sprintf("g%d", i%10)
			id := fmt.Sprintf("run-%d", i)
			ps = append(ps, engine.AcquireParams{Task: "t", Group: g, RunID: id, Token: id, MaxRuns: 2, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: now})
			rs = append(rs, engine.ReleaseParams{Task: "t", Group: g, RunID: id, Token: id, MaxRuns: 2, Reserve: time.Minute})
			ns = append(ns, engine.RenewParams{Task: "t", Group: g, RunID: id, Token: id, Lease: time.Minute})
		}
		res, errs := s.AcquireSlots(ctx, now, ps)
		held := 0
		for i := range res {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if res[i].Outcome == engine.AcquireHeld {
				held++
			}
		}
		if held != 20 {
			t.Fatalf("%d held, want 2 of each of 10 groups", held)
		}
		if _, errs := s.RenewSlots(ctx, now, ns); errs[0] != nil {
			t.Fatal(errs[0])
		}
		rres, errs := s.ReleaseSlots(ctx, now, rs)
		next := 0
		for i := range rres {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			next += len(rres[i].Next)
		}
		if next != 20 {
			t.Fatalf("%d runs handed a slot, want the 20 waiting", next)
		}
		var ups []engine.UnparkParams
		for i := range 8 {
			ups = append(ups, engine.UnparkParams{RunID: engine.InPartition(fmt.Sprintf("run-x%d", i), i), Task: "t"})
		}
		if res, errs := s.Unpark(ctx, ups); errs[0] != nil || res[0] != engine.UnparkMissing {
			t.Fatalf("unpark of missing runs = %v, %v", res, errs)
		}
	})
}
