package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Concurrency groups (task.Options.Concurrency). Between reading a run
// from its stream and beginning its attempt, the worker asks the run's
// group for a slot (concurrencyGate.admit, one script call per partition
// the groups of a fetched batch are in). A run that gets one goes on as
// any other and gives it back when its attempt ends, whatever the outcome
// (a retry asks again when it is delivered again, so a run waiting for
// its backoff holds no slot). A run whose group is full waits, parked out
// of its stream in its own partition, until a run of its group gives its
// slot back: the release reserves the slot for the first run in line and
// puts that run back in its stream. The heartbeats renew the slots this
// worker holds, with the runs' lease, so a dead worker's slots are given
// back once that lease lapses; and they look at parked runs now and then
// (recoverParked), so that no run is left parked when the worker that was
// to put it back died midway, or a reservation lapsed.

// concurrencyStore is what the concurrency gate reads and writes in Redis.
type concurrencyStore interface {
	AcquireSlots(ctx context.Context, now time.Time, ps []engine.AcquireParams) ([]engine.AcquireResult, []error)
	ReleaseSlots(ctx context.Context, now time.Time, ps []engine.ReleaseParams) ([]engine.ReleaseResult, []error)
	RenewSlots(ctx context.Context, now time.Time, ps []engine.RenewParams) ([]bool, []error)
	Park(ctx context.Context, recheck time.Time, ps []engine.ParkParams) ([]string, []error)
	Unpark(ctx context.Context, ps []engine.UnparkParams) ([]string, []error)
	TakeParked(ctx context.Context, part int, now, next time.Time, limit int) ([]engine.ParkedRun, error)
	ParkedStates(ctx context.Context, now time.Time, runs []engine.ParkedRun) ([]engine.ParkedState, error)
	CancelWithNotice(ctx context.Context, runID, reason, notice string, now time.Time) (engine.FinishResult, error)
}

// parkedBatch is the most parked runs one look takes per partition.
const parkedBatch = 500

// handOnRounds bounds the rounds of handOn: each round gives back the
// reservations of runs that ended while they waited, and takes the next.
const handOnRounds = 100

// concurrencyCause reads the cause of runID's cancel from reason, its
// record's error; ok is false when its group did not cancel it.
func concurrencyCause(runID, reason string) (err error, ok bool) {
	group, by, ok := cancelreason.Parse(reason)
	if !ok {
		return nil, false
	}
	return &client.RunError{RunID: runID, Status: client.StatusCancelled, Message: reason, Group: group, By: by}, true
}

// waitingReason is what a parked run's record says of it.
func waitingReason(group string, holders, max int) string {
	return fmt.Sprintf("concurrency group %q (%d/%d running)", group, holders, max)
}

// heldSlots are the slots this worker holds for a run, one in each of its
// groups.
type heldSlots struct {
	slots []engine.AcquireParams
	// n counts the run's attempts on this worker that hold the slots (a
	// worker may reclaim its own delivery while the older attempt ends).
	n int
}

// concurrencyGate decides, for the deliveries of tasks with a concurrency
// limit, which start now (see the top of this file). A nil gate, for a
// worker without such tasks, lets every delivery through.
type concurrencyGate struct {
	store      concurrencyStore
	tasks      map[string]*registration
	slots      slots
	consumer   string
	lease      time.Duration
	opTimeout  time.Duration
	partitions int
	clock      task.Clock
	log        *slog.Logger
	// releases coalesces the slots given back at about the same time into
	// one call of the release script per partition.
	releases *engine.Batcher[engine.ReleaseParams, engine.ReleaseResult]

	mu   sync.Mutex
	held map[string]*heldSlots
	// looking is set while a look at the parked runs is under way.
	looking atomic.Bool
	// bg counts the goroutines that hand slots on and look at parked
	// runs; once stopped is set (under mu) no more start.
	bg      sync.WaitGroup
	stopped bool
}

// newConcurrencyGate returns the gate of the tasks registered on a worker,
// or nil when none has a concurrency limit.
func newConcurrencyGate(g *concurrencyGate) (*concurrencyGate, error) {
	limited := false
	for _, reg := range g.tasks {
		limited = limited || len(reg.def.Concurrency) > 0
	}
	if !limited {
		return nil, nil
	}
	gate := g
	gate.held = map[string]*heldSlots{}
	var err error
	gate.releases, err = engine.NewBatcher(engine.BatcherOptions{Timeout: g.lease, Senders: 1},
		func(ctx context.Context, ps []engine.ReleaseParams) ([]engine.ReleaseResult, []error) {
			return g.store.ReleaseSlots(ctx, g.clock.Now(), ps)
		})
	if err != nil {
		return nil, err
	}
	return gate, nil
}

// asking is a delivery whose groups admit is asking, in the order it
// asks them.
type asking struct {
	i     int // in the fetched batch
	ps    []engine.AcquireParams
	taken []engine.AcquireParams
	// done: refused (parked, cancelled) or failed; it does not start.
	done bool
}

// groupsOf returns what d asks its groups, in the order they are asked: the
// groups whose strategy may hold it back or cancel it first, in the order
// declared, then those with task.CancelInProgress, which always admit it
// (by displacing their oldest run). So no run is displaced for a run that
// another of its groups then holds back. nil: d starts outside any group.
func (g *concurrencyGate) groupsOf(d engine.Delivery) []engine.AcquireParams {
	reg := g.tasks[d.Task]
	if reg == nil || len(reg.def.Concurrency) == 0 {
		return nil
	}
	if d.Spec == nil {
		g.log.Warn("taskq: delivery carries no input; it starts outside its concurrency groups", "run", d.RunID, "task", d.Task)
		return nil
	}
	groups, err := taskdef.ConcurrencyGroups(reg.def, d.Spec.Input, d.Spec.Meta)
	if err != nil {
		// Admission derived the groups when the run was triggered: the
		// task's definition changed since.
		g.log.Warn("taskq: concurrency group of a run failed; it starts outside its groups", "run", d.RunID, "task", d.Task, "err", err)
		return nil
	}
	ps := make([]engine.AcquireParams, 0, len(groups))
	for _, displace := range []bool{false, true} {
		for i, c := range reg.def.Concurrency {
			if (c.Strategy == task.CancelInProgress) != displace {
				continue
			}
			ps = append(ps, engine.AcquireParams{
				Task: d.Task, Group: groups[i], Index: i, RunID: d.RunID, Token: g.consumer + " " + d.EntryID,
				MaxRuns: c.MaxRuns, Strategy: string(c.Strategy), Lease: g.lease, Created: d.Spec.Created,
			})
		}
	}
	return ps
}

// admit asks the groups of ds for slots and returns the deliveries that
// may start now, in their order. A run of several groups asks them one
// after the other (groupsOf says in which order), one script call per
// partition for the batch each time, and starts only once each has given
// it a slot; one that holds it back (task.GroupRoundRobin: parked in that
// group's line; task.CancelNewest: cancelled) gets back the slots the
// others gave it, so a waiting run holds none. The deliveries that do not
// start give their handler slot back: parked, cancelled, or left pending
// after an error (reclaimed once their lease lapses, and asked again). A
// run given the slot of an older one (task.CancelInProgress) starts, and
// the older one is cancelled.
func (g *concurrencyGate) admit(ds []engine.Delivery) []engine.Delivery {
	if g == nil {
		return ds
	}
	var asks []*asking
	for i, d := range ds {
		if ps := g.groupsOf(d); len(ps) > 0 {
			asks = append(asks, &asking{i: i, ps: ps})
		}
	}
	if len(asks) == 0 {
		return ds
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opTimeout)
	defer cancel()
	now := g.clock.Now()
	drop := make([]bool, len(ds))
	var (
		park    []engine.ParkParams
		cancels [][2]string // run, reason
		back    []engine.ReleaseParams
	)
	// refuse ends a's asking: the slots it took are given back, and so is
	// any slot a group it did not ask yet may have reserved for it.
	refuse := func(a *asking, round int) {
		a.done, drop[a.i] = true, true
		for _, p := range a.taken {
			back = append(back, releaseOf(p, p.Token))
		}
		for _, p := range a.ps[round+1:] {
			back = append(back, releaseOf(p, ""))
		}
	}
	for round := 0; ; round++ {
		var (
			ask []engine.AcquireParams
			who []*asking
		)
		for _, a := range asks {
			if !a.done && round < len(a.ps) {
				ask, who = append(ask, a.ps[round]), append(who, a)
			}
		}
		if len(ask) == 0 {
			break
		}
		res, errs := g.store.AcquireSlots(ctx, now, ask)
		for j, a := range who {
			p, r := ask[j], res[j]
			switch {
			case errs[j] != nil:
				g.log.Warn("taskq: asking for a concurrency slot failed; the delivery is taken again after its lease", "run", p.RunID, "group", p.Group, "err", errs[j])
				refuse(a, round)
			case r.Outcome == engine.AcquireHeld:
				a.taken = append(a.taken, p)
			case r.Outcome == engine.AcquireEvict:
				a.taken = append(a.taken, p)
				cancels = append(cancels, [2]string{r.Evicted, cancelreason.Displaced(p.RunID, p.Group)})
			case r.Outcome == engine.AcquireFull:
				refuse(a, round)
				cancels = append(cancels, [2]string{p.RunID, cancelreason.FullGroup(p.Group, r.Holders, p.MaxRuns)})
			default: // AcquireWait
				refuse(a, round)
				park = append(park, engine.ParkParams{
					RunID: p.RunID, Task: p.Task, EntryID: ds[a.i].EntryID, Group: p.Group, Index: p.Index, Priority: ds[a.i].Priority,
					Reason: waitingReason(p.Group, r.Holders, p.MaxRuns),
				})
			}
		}
	}
	for _, a := range asks {
		if !a.done {
			g.hold(a.ps[0].RunID, a.taken)
		}
	}
	g.giveBack(back)
	if len(park) > 0 {
		_, perrs := g.store.Park(ctx, now.Add(g.lease), park)
		for j, err := range perrs {
			if err != nil {
				g.log.Warn("taskq: parking a run its group holds back failed; the delivery is taken again after its lease", "run", park[j].RunID, "err", err)
			}
		}
	}
	for _, c := range cancels {
		if _, err := g.store.CancelWithNotice(ctx, c[0], c[1], c[1], now); err != nil {
			g.log.Warn("taskq: cancelling a run for its concurrency group failed", "run", c[0], "reason", c[1], "err", err)
		}
	}
	out, dropped := ds[:0:0], 0
	for i, d := range ds {
		if drop[i] {
			dropped++
			continue
		}
		out = append(out, d)
	}
	if dropped > 0 {
		g.slots.release(dropped)
	}
	return out
}

// releaseOf gives back the slot p asked for, held with token ("": one
// reserved for the run).
func releaseOf(p engine.AcquireParams, token string) engine.ReleaseParams {
	return engine.ReleaseParams{Task: p.Task, Group: p.Group, Index: p.Index, RunID: p.RunID, Token: token, MaxRuns: p.MaxRuns, Reserve: p.Lease}
}

func (g *concurrencyGate) hold(runID string, slots []engine.AcquireParams) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.held[runID]
	if h == nil {
		h = &heldSlots{}
		g.held[runID] = h
	}
	h.slots = slots
	h.n++
}

// release gives back the slots runID holds, once its last attempt on this
// worker has ended, and hands the slots its groups have free on.
func (g *concurrencyGate) release(runID string) {
	if g == nil {
		return
	}
	g.mu.Lock()
	h := g.held[runID]
	if h != nil {
		h.n--
		if h.n > 0 {
			h = nil
		} else {
			delete(g.held, runID)
		}
	}
	g.mu.Unlock()
	if h == nil {
		return
	}
	back := make([]engine.ReleaseParams, len(h.slots))
	for i, p := range h.slots {
		back[i] = releaseOf(p, p.Token)
	}
	g.giveBack(back)
}

// giveBack gives slots back, coalesced with others given back at about
// the same time, and hands on the slots they free to the runs in line.
func (g *concurrencyGate) giveBack(ps []engine.ReleaseParams) {
	for _, p := range ps {
		g.releases.Go(context.Background(), p, func(r engine.ReleaseResult, err error) {
			if err != nil {
				// The slot lapses with its lease, no longer renewed.
				g.log.Warn("taskq: giving a concurrency slot back failed; it is free once its lease lapses", "run", p.RunID, "group", p.Group, "err", err)
				return
			}
			if len(r.Next) > 0 {
				// Not on the goroutine that sent the batch. Once the worker
				// stops, the reservations lapse and another worker's look at
				// the parked runs puts them back.
				g.goBackground(func() { g.handOn(p, r.Next) })
			}
		})
	}
}

// handOn puts the runs a group reserved slots for back in their stream.
// A run that ended while it waited gives its reservation back, which
// hands the slot to the next in line. A run not parked (its delivery is
// still being parked) keeps its reservation: a look at the parked runs
// puts it back once that lapses.
func (g *concurrencyGate) handOn(of engine.ReleaseParams, next []string) {
	for round := 0; len(next) > 0 && round < handOnRounds; round++ {
		ctx, cancel := context.WithTimeout(context.Background(), g.opTimeout)
		ups := make([]engine.UnparkParams, len(next))
		for i, id := range next {
			ups[i] = engine.UnparkParams{RunID: id, Task: of.Task}
		}
		res, errs := g.unpark(ctx, ups)
		var back []engine.ReleaseParams
		for i, id := range next {
			switch {
			case errs[i] != nil:
				g.log.Warn("taskq: putting a run back in its stream failed; it is put back once its reservation lapses", "run", id, "err", errs[i])
			case res[i] == engine.UnparkQueued, res[i] == engine.UnparkNotParked:
			default: // missing or ended
				back = append(back, engine.ReleaseParams{Task: of.Task, Group: of.Group, Index: of.Index, RunID: id, MaxRuns: of.MaxRuns, Reserve: g.lease})
			}
		}
		next = nil
		if len(back) > 0 {
			rres, rerrs := g.store.ReleaseSlots(ctx, g.clock.Now(), back)
			for i := range rres {
				if rerrs[i] != nil {
					g.log.Warn("taskq: giving a reservation back failed; it lapses", "run", back[i].RunID, "err", rerrs[i])
					continue
				}
				next = append(next, rres[i].Next...)
			}
		}
		cancel()
	}
}

// unparkRetries are the pauses before asking again to unpark a run that
// was not parked yet: a run is put in its group's line before its
// delivery is parked, so a slot may be reserved for it in between, and
// the park follows within a round trip.
var unparkRetries = []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 200 * time.Millisecond}

// unpark is Store.Unpark that asks again, after each of unparkRetries,
// for the runs that were not parked yet.
func (g *concurrencyGate) unpark(ctx context.Context, ups []engine.UnparkParams) ([]string, []error) {
	res, errs := g.store.Unpark(ctx, ups)
	for _, pause := range unparkRetries {
		var again []int
		for i := range ups {
			if errs[i] == nil && res[i] == engine.UnparkNotParked {
				again = append(again, i)
			}
		}
		if len(again) == 0 {
			break
		}
		time.Sleep(pause)
		sub := make([]engine.UnparkParams, len(again))
		for j, i := range again {
			sub[j] = ups[i]
		}
		r, e := g.store.Unpark(ctx, sub)
		for j, i := range again {
			res[i], errs[i] = r[j], e[j]
		}
	}
	return res, errs
}

// beat renews the slots this worker holds, and starts a look at the
// parked runs unless one is still under way; the heartbeater calls it
// each interval, after renewing the leases.
func (g *concurrencyGate) beat() {
	if g == nil {
		return
	}
	g.renew()
	if g.looking.CompareAndSwap(false, true) && !g.goBackground(func() {
		defer g.looking.Store(false)
		g.recoverParked()
	}) {
		g.looking.Store(false)
	}
}

// goBackground runs fn on a goroutine of its own that wait waits for,
// unless wait was called already; it reports whether fn runs.
func (g *concurrencyGate) goBackground(fn func()) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return false
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		fn()
	}()
	return true
}

// wait returns once the goroutines the gate started have ended; the
// heartbeater calls it as it stops, the last of the gate's users (the
// processor, which gives slots back, stops before it).
func (g *concurrencyGate) wait() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	g.mu.Unlock()
	g.bg.Wait()
}

func (g *concurrencyGate) renew() {
	g.mu.Lock()
	ps := make([]engine.RenewParams, 0, len(g.held))
	for id, h := range g.held {
		for _, p := range h.slots {
			ps = append(ps, engine.RenewParams{Task: p.Task, Group: p.Group, Index: p.Index, RunID: id, Token: p.Token, Lease: g.lease})
		}
	}
	g.mu.Unlock()
	if len(ps) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opTimeout)
	defer cancel()
	res, errs := g.store.RenewSlots(ctx, g.clock.Now(), ps)
	for i := range ps {
		switch {
		case errs[i] != nil:
			g.log.Warn("taskq: renewing a concurrency slot failed", "run", ps[i].RunID, "group", ps[i].Group, "err", errs[i])
		case !res[i]:
			g.log.Debug("taskq: concurrency slot no longer held", "run", ps[i].RunID, "group", ps[i].Group)
		}
	}
}

// recoverParked looks at the parked runs due for a look in every
// partition: it hands the free slots of their groups on (a holder whose
// lease lapsed frees its slot only when someone asks), and puts back in
// their streams the runs their group neither holds a slot for nor has in
// its line.
func (g *concurrencyGate) recoverParked() {
	now := g.clock.Now()
	var taken []engine.ParkedRun
	for part := range max(g.partitions, 1) {
		ctx, cancel := context.WithTimeout(context.Background(), g.opTimeout)
		runs, err := g.store.TakeParked(ctx, part, now, now.Add(g.lease), parkedBatch)
		cancel()
		if err != nil {
			g.log.Warn("taskq: reading parked runs failed", "partition", part, "err", err)
			continue
		}
		taken = append(taken, runs...)
	}
	if len(taken) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), g.opTimeout)
	defer cancel()
	type slot struct {
		task, group string
		index       int
	}
	seen := map[slot]bool{}
	var pump []engine.ReleaseParams
	for _, r := range taken {
		reg := g.tasks[r.Task]
		at := slot{r.Task, r.Group, r.Index}
		if reg == nil || r.Index >= len(reg.def.Concurrency) || seen[at] {
			continue
		}
		seen[at] = true
		pump = append(pump, engine.ReleaseParams{Task: r.Task, Group: r.Group, Index: r.Index, MaxRuns: reg.def.Concurrency[r.Index].MaxRuns, Reserve: g.lease})
	}
	res, errs := g.store.ReleaseSlots(ctx, now, pump)
	for i, r := range res {
		if errs[i] == nil && len(r.Next) > 0 {
			g.handOn(pump[i], r.Next)
		}
	}
	states, err := g.store.ParkedStates(ctx, now, taken)
	if err != nil {
		g.log.Warn("taskq: reading the groups of parked runs failed", "err", err)
		return
	}
	var lost []engine.UnparkParams
	for i, st := range states {
		if !st.Holding && !st.Waiting {
			lost = append(lost, engine.UnparkParams{RunID: taken[i].RunID, Task: taken[i].Task})
		}
	}
	if len(lost) == 0 {
		return
	}
	ures, uerrs := g.store.Unpark(ctx, lost)
	n := 0
	for i := range ures {
		if uerrs[i] == nil && ures[i] == engine.UnparkQueued {
			n++
		}
	}
	g.log.Info("taskq: parked runs their group had lost put back in their streams", "runs", n)
}
