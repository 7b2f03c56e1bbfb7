package enginetest

import (
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var priorityCases = []suiteCase{
	{"ReadByPriorityTakesTheHighestFirst", priorityOrder},
	{"ReadByPriorityGivesALowerPriorityItsTurn", priorityTurns},
	{"ReadGroupReadsEveryPriority", priorityReadGroup},
	{"APriorityIsKeptWhereverTheRunIsQueuedAgain", priorityKept},
	{"ARunOfAPriorityCanBeCancelledCountedAndClaimed", priorityConsumers},
	{"AnEventsRunsHaveTheirPriorities", priorityEvent},
}

// readByPriority reads, in every partition, up to count deliveries of
// task for consumer with ReadByPriority (bound as given): by partition,
// and whether a priority above the default may hold more in any.
func (h *h) readByPriority(task, consumer string, count, bound int) (map[int][]engine.Delivery, bool) {
	h.Helper()
	if err := h.e.EnsureGroup(h.ctx, task); err != nil {
		h.Fatalf("ensure group %s: %v", task, err)
	}
	out, more := map[int][]engine.Delivery{}, false
	for part := range h.parts {
		ds, m, err := h.e.ReadByPriority(h.ctx, part, consumer, []string{task}, count, bound)
		if err != nil {
			h.Fatalf("read %s by priority in partition %d: %v", task, part, err)
		}
		if len(ds) > 0 {
			out[part] = ds
		}
		more = more || m
	}
	return out, more
}

// queue enqueues a run of task "t" without a key at priority prio (0: no
// priority given) and returns its ID.
func (h *h) queuePriority(prio int) string {
	h.Helper()
	p := h.params("t", "", engine.StrategyNone)
	p.Priority = prio
	if r := h.enqueue(p); !r.Accepted {
		h.Fatalf("trigger %s not accepted: %+v", p.RunID, r)
	}
	return p.RunID
}

// Within a partition, a read by priority delivers a task's runs the
// highest priority first and in the order they were queued within one;
// each delivery and each record says the run's priority, the default's
// being 1.
func priorityOrder(h *h) {
	prio := map[string]int{}
	var order []string
	for _, p := range []int{1, 3, 0, 2, 1, 3, 2} {
		id := h.queuePriority(p)
		prio[id], order = max(p, engine.PriorityDefault), append(order, id)
	}
	byPart, more := h.readByPriority("t", "w", 100, engine.PriorityBound)
	n := 0
	for part, ds := range byPart {
		for i, d := range ds {
			n++
			if d.Priority != prio[d.RunID] {
				h.Fatalf("delivery of %s says priority %d, want %d", d.RunID, d.Priority, prio[d.RunID])
			}
			if r := h.run(d.RunID); r.Priority != prio[d.RunID] {
				h.Fatalf("record of %s says priority %d, want %d", d.RunID, r.Priority, prio[d.RunID])
			}
			if i == 0 {
				continue
			}
			a := ds[i-1]
			if a.Priority < d.Priority || (a.Priority == d.Priority && index(order, a.RunID) > index(order, d.RunID)) {
				h.Fatalf("partition %d: %s (priority %d) read before %s (priority %d)", part, a.RunID, a.Priority, d.RunID, d.Priority)
			}
		}
	}
	if n != len(order) || more {
		h.Fatalf("read %d deliveries (more %v), want %d and no more", n, more, len(order))
	}
	if again, more := h.readByPriority("t", "w", 100, engine.PriorityBound); len(again) != 0 || more {
		h.Fatalf("read again: %v (more %v)", again, more)
	}
}

func index(ids []string, id string) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return -1
}

// While runs of a higher priority keep the queue busy, a run of a lower
// one waits, within its partition, behind at most bound+1 of them: the
// turns carry over from read to read, and across consumers.
func priorityTurns(h *h) {
	const bound = 2
	var lows []string
	for range 3 {
		lows = append(lows, h.queuePriority(1))
	}
	highs := map[string]bool{}
	for range 4 * (bound + 2) * h.parts {
		highs[h.queuePriority(3)] = true
	}
	waiting := map[int]int{} // low runs still queued, by partition
	for _, id := range lows {
		waiting[h.partOf(id)]++
	}
	since := map[int]int{} // high runs read since the partition's last low one
	for i := 0; ; i++ {
		consumer := []string{"w1", "w2"}[i%2]
		byPart, _ := h.readByPriority("t", consumer, 1, bound)
		if len(byPart) == 0 {
			break
		}
		for part, ds := range byPart {
			for _, d := range ds {
				switch {
				case !highs[d.RunID]:
					waiting[part]--
					since[part] = 0
				case waiting[part] > 0:
					if since[part]++; since[part] > bound+1 {
						h.Fatalf("partition %d: a run of priority 1 waited behind %d of priority 3 (bound %d)", part, since[part], bound+1)
					}
				}
			}
		}
	}
	for part, n := range waiting {
		if n != 0 {
			h.Fatalf("partition %d: %d runs of priority 1 never read", part, n)
		}
	}
}

// A plain read (ReadGroup) takes from every priority's queue, the highest
// first in its answer.
func priorityReadGroup(h *h) {
	low, high := h.queuePriority(1), h.queuePriority(3)
	ds := h.read("t", "w")
	if len(ds) != 2 {
		h.Fatalf("read %+v, want both runs", ds)
	}
	for _, d := range ds {
		want := map[string]int{low: 1, high: 3}[d.RunID]
		if d.Priority != want {
			h.Fatalf("delivery of %s says priority %d, want %d", d.RunID, d.Priority, want)
		}
	}
	if h.partOf(low) == h.partOf(high) && ds[0].RunID != high {
		h.Fatalf("read %+v, want the run of priority 3 first", ds)
	}
}

// A run of priority 3 queued again (a retry, a requeue, a parked run
// unparked, a deferred run promoted, a scheduled run due) is delivered at
// priority 3 each time, as is one whose lease lapsed and is claimed.
func priorityKept(h *h) {
	redeliver := func(what, id string) engine.Delivery {
		h.Helper()
		d := h.only(h.read("t", "w"), id)
		if d.Priority != 3 {
			h.Fatalf("%s: delivered at priority %d, want 3", what, d.Priority)
		}
		return d
	}
	p := h.params("t", "", engine.StrategyNone)
	p.Priority, p.Delay = 3, time.Minute
	h.enqueue(p)
	if n := h.promote(h.now.Add(time.Minute)); n != 1 {
		h.Fatalf("promoted %d scheduled runs, want 1", n)
	}
	d := redeliver("scheduled", p.RunID)
	st := h.start("w", d)
	if lr, err := h.e.Heartbeat(h.ctx, "t", "w", []engine.Lease{{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt, Priority: d.Priority}}); err != nil || lr[0].State != engine.LeaseHeld {
		h.Fatalf("heartbeat = %+v, %v", lr, err)
	}
	f := h.outcome(d, st, engine.OutcomeRetry, "again")
	f.Priority = d.Priority
	if r := h.finish(f); !r.Written {
		h.Fatalf("retry = %+v", r)
	}
	if n := h.promote(h.now.Add(time.Hour)); n != 1 {
		h.Fatalf("promoted %d retries, want 1", n)
	}
	d = redeliver("retried", p.RunID)
	st = h.start("w", d)
	if r, err := h.e.Requeue(h.ctx, p.RunID, "t", st.Attempt); err != nil || !r.Written {
		h.Fatalf("requeue = %+v, %v", r, err)
	}
	d = redeliver("requeued", p.RunID)
	if res, errs := h.e.Park(h.ctx, h.now, []engine.ParkParams{{RunID: p.RunID, Task: "t", EntryID: d.EntryID, Reason: "r", Group: "g", Priority: d.Priority}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
		h.Fatalf("park = %v, %v", res, errs)
	}
	if up, errs := h.e.Unpark(h.ctx, []engine.UnparkParams{{RunID: p.RunID, Task: "t"}}); errs[0] != nil || up[0] != engine.UnparkQueued {
		h.Fatalf("unpark = %v, %v", up, errs)
	}
	d = redeliver("unparked", p.RunID)
	if res, errs := h.e.DeferRuns(h.ctx, []engine.Deferral{{Delivery: d, Due: h.now.Add(time.Second), Reason: "rate limit"}}); errs[0] != nil || !res[0].Held {
		h.Fatalf("defer = %+v, %v", res, errs)
	}
	if n := h.promote(h.now.Add(2 * time.Hour)); n != 1 {
		h.Fatalf("promoted %d deferred runs, want 1", n)
	}
	redeliver("deferred", p.RunID)
	claimed := h.claim("t", "w2", 0)
	if len(claimed) != 1 || claimed[0].RunID != p.RunID || claimed[0].Priority != 3 {
		h.Fatalf("claimed %+v, want the run at priority 3", claimed)
	}
	if r := h.run(p.RunID); r.Priority != 3 || r.Status != engine.StatusQueued {
		h.Fatalf("record = priority %d, %s", r.Priority, r.Status)
	}
}

// The readers of queues see every priority's: queue figures count a
// queued run of priority 2, a cancel drops its delivery, and a finish
// acknowledges it.
func priorityConsumers(h *h) {
	if err := h.e.EnsureGroup(h.ctx, "t"); err != nil {
		h.Fatal(err)
	}
	a, b := h.queuePriority(2), h.queuePriority(2)
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"].Queued != 2 {
		h.Fatalf("queue = %+v, %v; want 2 queued", q, err)
	}
	if r, err := h.e.Cancel(h.ctx, a, "no longer wanted", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	d := h.only(h.read("t", "w"), b)
	st := h.start("w", d)
	f := h.outcome(d, st, engine.OutcomeSucceeded, `{}`)
	f.Priority = d.Priority
	if r := h.finish(f); !r.Written {
		h.Fatalf("finish = %+v", r)
	}
	if q, err := h.e.QueueStats(h.ctx, []string{"t"}); err != nil || q["t"].Queued != 0 || q["t"].InFlight != 0 {
		h.Fatalf("queue after = %+v, %v; want empty", q, err)
	}
}

// The runs an event triggers have the priorities their triggers give,
// whether the event is pushed at once or in steps (runs in other
// partitions).
func priorityEvent(h *h) {
	high := h.eventRun("t", "k-high", engine.StrategyTTL)
	high.Run.Priority = 3
	plain := h.eventRun("u", "", engine.StrategyNone)
	failed := engine.EventTask{Task: "v", Error: "evaluating input.missing: no such key"}
	runs := h.push(h.event("order.paid", high, plain, failed))
	if len(runs) != 3 || runs[0].Outcome != engine.EventRunCreated || runs[1].Outcome != engine.EventRunCreated {
		h.Fatalf("event runs = %+v", runs)
	}
	for task, want := range map[string]int{"t": 3, "u": 1} {
		id := runs[0].RunID
		if task == "u" {
			id = runs[1].RunID
		}
		if r := h.run(id); r.Priority != want {
			h.Fatalf("run of %s has priority %d, want %d", task, r.Priority, want)
		}
		if d := h.only(h.read(task, "w"), id); d.Priority != want {
			h.Fatalf("delivery of %s has priority %d, want %d", task, d.Priority, want)
		}
	}
}
