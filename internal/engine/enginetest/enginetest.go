// Package enginetest is the conformance suite of the storage contract
// (package engine): what any implementation must pass to serve taskq, a
// definition of done for a second engine. It speaks only the contract, so
// it holds the same for every store.
//
// An implementation runs it from a test of its own:
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, func(t *testing.T) engine.Engine { return open(t) }, enginetest.Options{})
//	}
//
// open returns an engine on a namespace of the test's own, empty, that is
// cleaned up when the test ends. Subtests are grouped by the sub-interface
// they exercise (Triggers/..., Deliveries/..., Runs/..., Children/...,
// Keys/..., Events/..., Schedules/..., Controls/..., Workers/...,
// Stats/..., Sessions/..., Namespace/...). No case asserts a duration:
// waits for something that takes time (a lease to lapse, a record to
// expire) poll with a generous deadline.
package enginetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// Options say what a store cannot do, and give the suite what it cannot
// reach through the contract.
type Options struct {
	// NoBlocking says the store's reads do not wait for an entry
	// (ReadGroup with a block returns at once): the case of a read that
	// waits is left out. (Every Redis backend, miniredis too, waits.)
	NoBlocking bool
	// Elapse lets d pass on the store's own clock, the one its expiries
	// keep (records past their retention, sessions past their TTL): a
	// store that cannot move it sleeps (nil: time.Sleep). Lease lapses
	// are measured by real time and always slept.
	Elapse func(d time.Duration)
	// Reopen returns another engine on the namespace of e, configured
	// with partitions (0: adopt the namespace's), as another process
	// opens it. Nil leaves out what needs two engines on one namespace.
	Reopen func(t *testing.T, e engine.Engine, partitions int) engine.Engine
}

// suiteCase is one subtest of a group.
type suiteCase struct {
	name string
	fn   func(h *h)
}

// Run runs the suite: every group as a subtest, every case in a
// namespace of its own from open.
func Run(t *testing.T, open func(t *testing.T) engine.Engine, opts Options) {
	groups := []struct {
		name  string
		cases []suiteCase
	}{
		{"Triggers", triggerCases},
		{"Deliveries", deliveryCases},
		{"Priorities", priorityCases},
		{"Waits", waitCases},
		{"Runs", runCases},
		{"Children", childrenCases},
		{"Keys", keyCases},
		{"Events", eventCases},
		{"Schedules", scheduleCases},
		{"Controls", controlCases},
		{"Workers", workerCases},
		{"Stats", statsCases},
		{"Sessions", sessionCases},
		{"Namespace", namespaceCases},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) { c.fn(newH(t, open, opts)) })
			}
		})
	}
}

// h is a case's harness: its engine, a clock of its own and the helpers
// that walk a run through the contract.
type h struct {
	*testing.T
	e     engine.Engine
	open  func(t *testing.T) engine.Engine
	opts  Options
	ctx   context.Context
	now   time.Time
	parts int

	mu sync.Mutex
	n  int
}

func newH(t *testing.T, open func(t *testing.T) engine.Engine, opts Options) *h {
	t.Helper()
	e := open(t)
	ctx := context.Background()
	parts, err := e.PartitionCount(ctx)
	if err != nil {
		t.Fatalf("partition count: %v", err)
	}
	if parts < 1 {
		t.Fatalf("partition count %d, want at least 1", parts)
	}
	// Whole milliseconds, as stores keep times.
	return &h{T: t, e: e, open: open, opts: opts, ctx: ctx, now: time.UnixMilli(time.Now().UnixMilli()), parts: parts}
}

// id returns an ID unique in the case.
func (h *h) id(prefix string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n++
	return fmt.Sprintf("%s-%d", prefix, h.n)
}

// params describes a trigger of task with key under strat (no key for
// StrategyNone).
func (h *h) params(task, key string, strat engine.Strategy) *engine.EnqueueParams {
	if strat == engine.StrategyNone {
		key = ""
	}
	id := h.id("run")
	return &engine.EnqueueParams{
		RunID: id, Task: task, Input: []byte(`{"run":"` + id + `"}`), Meta: []byte(`{"m":1}`),
		Key: key, Strategy: strat, Hold: time.Minute, Retries: 1, MaxDeliveries: 5,
		Retention: time.Hour, Now: h.now,
	}
}

func (h *h) enqueue(p *engine.EnqueueParams) engine.EnqueueResult {
	h.Helper()
	r, err := h.e.Enqueue(h.ctx, p)
	if err != nil {
		h.Fatalf("enqueue %s: %v", p.RunID, err)
	}
	return r
}

// read reads every new delivery of task, in every partition, for
// consumer, without waiting.
func (h *h) read(task, consumer string) []engine.Delivery {
	h.Helper()
	if err := h.e.EnsureGroup(h.ctx, task); err != nil {
		h.Fatalf("ensure group %s: %v", task, err)
	}
	var out []engine.Delivery
	for part := range h.parts {
		ds, err := h.e.ReadGroup(h.ctx, part, consumer, []string{task}, 100, -1)
		if err != nil {
			h.Fatalf("read %s in partition %d: %v", task, part, err)
		}
		out = append(out, ds...)
	}
	return out
}

// deliver enqueues p, which must be created and queued at once, and reads
// its delivery for consumer.
func (h *h) deliver(p *engine.EnqueueParams, consumer string) engine.Delivery {
	h.Helper()
	if r := h.enqueue(p); !r.Accepted {
		h.Fatalf("trigger %s not accepted: %+v", p.RunID, r)
	}
	return h.only(h.read(p.Task, consumer), p.RunID)
}

// only returns the one delivery of ds, which must be of run.
func (h *h) only(ds []engine.Delivery, run string) engine.Delivery {
	h.Helper()
	if len(ds) != 1 || ds[0].RunID != run {
		h.Fatalf("deliveries %+v, want one of %s", ds, run)
	}
	return ds[0]
}

func (h *h) start(consumer string, d engine.Delivery) engine.StartResult {
	h.Helper()
	return h.startAt(consumer, d, h.now)
}

func (h *h) startAt(consumer string, d engine.Delivery, at time.Time) engine.StartResult {
	h.Helper()
	rs, errs := h.e.StartBatch(h.ctx, consumer, at, []engine.Delivery{d})
	if len(rs) != 1 || len(errs) != 1 {
		h.Fatalf("start answered %d results, %d errors for one delivery", len(rs), len(errs))
	}
	if errs[0] != nil {
		h.Fatalf("start %s: %v", d.RunID, errs[0])
	}
	return rs[0]
}

// running delivers p to consumer and starts it.
func (h *h) running(p *engine.EnqueueParams, consumer string) (engine.Delivery, engine.StartResult) {
	h.Helper()
	d := h.deliver(p, consumer)
	st := h.start(consumer, d)
	if !st.Started {
		h.Fatalf("start %s: %+v", p.RunID, st)
	}
	return d, st
}

// outcome is the finish of the attempt st began of d.
func (h *h) outcome(d engine.Delivery, st engine.StartResult, o engine.Outcome, payload string) *engine.FinishParams {
	return &engine.FinishParams{RunID: d.RunID, Attempt: st.Attempt, Outcome: o, Payload: []byte(payload),
		Now: h.now, RetryAt: h.now, Task: d.Task, EntryID: d.EntryID, Spec: st.Spec}
}

func (h *h) finish(p *engine.FinishParams) engine.FinishResult {
	h.Helper()
	rs, errs := h.e.FinishBatch(h.ctx, []*engine.FinishParams{p})
	if len(rs) != 1 || len(errs) != 1 {
		h.Fatalf("finish answered %d results, %d errors for one outcome", len(rs), len(errs))
	}
	if errs[0] != nil {
		h.Fatalf("finish %s: %v", p.RunID, errs[0])
	}
	return rs[0]
}

func (h *h) run(id string) *engine.Run {
	h.Helper()
	r, err := h.e.GetRun(h.ctx, id)
	if err != nil {
		h.Fatalf("get run %s: %v", id, err)
	}
	return r
}

func (h *h) status(id string) string {
	h.Helper()
	st, err := h.e.RunStates(h.ctx, []string{id})
	if err != nil || len(st) != 1 {
		h.Fatalf("run states of %s: %v, %v", id, st, err)
	}
	return st[0].Status
}

// key reads who holds key.
func (h *h) key(key string) (engine.KeyState, bool) {
	h.Helper()
	ks, held, err := h.e.GetKey(h.ctx, key)
	if err != nil {
		h.Fatalf("get key %s: %v", key, err)
	}
	return ks, held
}

// partOf is the partition a run or event ID names.
func (h *h) partOf(id string) int {
	h.Helper()
	p, ok := engine.RunPartition(id)
	if !ok || p >= h.parts {
		h.Fatalf("ID %q names no partition of %d", id, h.parts)
	}
	return p
}

// promote moves what is due by now in every partition; it returns how
// many runs moved.
func (h *h) promote(now time.Time) int {
	h.Helper()
	n := 0
	for part := range h.parts {
		moved, _, err := h.e.PromoteDue(h.ctx, part, now, 1000)
		if err != nil {
			h.Fatalf("promote partition %d: %v", part, err)
		}
		n += moved
	}
	return n
}

// claim takes over, for consumer, the deliveries of task idle for
// minIdle, in every partition.
func (h *h) claim(task, consumer string, minIdle time.Duration) []engine.Delivery {
	h.Helper()
	var out []engine.Delivery
	for part := range h.parts {
		ds, err := h.e.AutoClaim(h.ctx, part, task, consumer, minIdle, 100)
		if err != nil {
			h.Fatalf("autoclaim %s in partition %d: %v", task, part, err)
		}
		out = append(out, ds...)
	}
	return out
}

// elapse lets d pass on the store's clock.
func (h *h) elapse(d time.Duration) {
	if h.opts.Elapse != nil {
		h.opts.Elapse(d)
		return
	}
	time.Sleep(d)
}

// eventuallyWithin is how long eventually waits: generous, as it only
// bounds a wait that should end far sooner.
const eventuallyWithin = 30 * time.Second

// eventually polls cond until it holds, failing after eventuallyWithin.
func (h *h) eventually(what string, cond func() bool) {
	h.Helper()
	deadline := time.Now().Add(eventuallyWithin)
	for !cond() {
		if time.Now().After(deadline) {
			h.Fatalf("%s: not within %s", what, eventuallyWithin)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// subscribe opens a Notices subscribed to topics and waits until the
// store confirmed each; it is closed when the case ends.
func (h *h) subscribe(topics ...string) engine.Notices {
	h.Helper()
	n := h.e.Notices()
	h.Cleanup(func() { _ = n.Close() })
	if err := n.Subscribe(h.ctx, topics...); err != nil {
		h.Fatalf("subscribe %v: %v", topics, err)
	}
	h.subscribed(n, len(topics))
	return n
}

// subscribed waits for count NoticeSubscribed on n.
func (h *h) subscribed(n engine.Notices, count int) {
	h.Helper()
	timer := time.NewTimer(eventuallyWithin)
	defer timer.Stop()
	for count > 0 {
		select {
		case nt := <-n.C():
			switch nt.Kind {
			case engine.NoticeSubscribed:
				count--
			case engine.NoticeMessage:
				h.Fatalf("a message before the subscription was confirmed: %+v", nt)
			}
		case <-timer.C:
			h.Fatalf("%d subscriptions not confirmed", count)
		}
	}
}

// receive reads count messages from n, by topic.
func (h *h) receive(n engine.Notices, count int) map[string][]string {
	h.Helper()
	got := map[string][]string{}
	timer := time.NewTimer(eventuallyWithin)
	defer timer.Stop()
	for count > 0 {
		select {
		case nt := <-n.C():
			if nt.Kind == engine.NoticeMessage {
				got[nt.Channel] = append(got[nt.Channel], nt.Payload)
				count--
			}
		case <-timer.C:
			h.Fatalf("%d notices missing; got %v", count, got)
		}
	}
	return got
}

// ids lists the run IDs of ds, sorted.
func ids(ds []engine.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.RunID
	}
	slices.Sort(out)
	return out
}

// sorted returns a sorted copy of s.
func sorted(s ...string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// ms says whether a and b are the same time to the millisecond.
func ms(a, b time.Time) bool { return a.UnixMilli() == b.UnixMilli() }

// race runs fn(0), ..., fn(n-1) in n goroutines released at once, and
// waits for them all: the concurrency cases' callers racing for one thing.
func race(n int, fn func(i int)) {
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			fn(i)
		}()
	}
	close(gate)
	wg.Wait()
}
