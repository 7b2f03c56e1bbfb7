package enginetest

import (
	"errors"
	"fmt"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var childrenCases = []suiteCase{
	{"ChildsRecordNamesItsParent", childParent},
	{"FirstRecordOfANameWins", childFirstRecord},
	{"EndedParentRecordsNoChild", childEndedParent},
	{"MarkRecordsTheChildCreated", childMark},
	{"CancelCascadesToChildrenButTheDetached", childCascade},
	{"CascadeOfAChildCreatedLateIsFinishedByRecovery", childCascadeLate},
	{"CascadeOfASupersededParentIsFinishedByRecovery", childCascadeSuperseded},
	{"RecoveryGivesUpOnAChildNeverCreated", childCascadeGivesUp},
	{"ChildrenExpireWithTheRecord", childExpire},
}

// child is the trigger of the child named name of parent, of task t, with
// its key (engine.ChildKey) and its ID placed as EnqueueBatch would.
func (h *h) child(parent, name, t string) *engine.EnqueueParams {
	h.Helper()
	p := h.params(t, engine.ChildKey(parent, name, ""), engine.StrategyStatus)
	if err := h.e.PlaceRuns(h.ctx, []*engine.EnqueueParams{p}); err != nil {
		h.Fatalf("place %s: %v", p.RunID, err)
	}
	return p
}

// record records the children ps of parent, named by their keys.
func (h *h) record(parent string, detached bool, ps ...*engine.EnqueueParams) []engine.Child {
	h.Helper()
	cs := make([]engine.Child, len(ps))
	for i, p := range ps {
		cs[i] = childOf(p, detached)
	}
	got, err := h.e.RecordChildren(h.ctx, parent, cs)
	if err != nil {
		h.Fatalf("record children of %s: %v", parent, err)
	}
	return got
}

// childOf is the record of the child p triggers, named after its key.
func childOf(p *engine.EnqueueParams, detached bool) engine.Child {
	return engine.Child{Name: p.Key[len(p.Key)-1:], RunID: p.RunID, Task: p.Task, Key: p.Key, Detached: detached}
}

func (h *h) children(parent string) []engine.Child {
	h.Helper()
	cs, err := h.e.ReadChildren(h.ctx, parent)
	if err != nil {
		h.Fatalf("read children of %s: %v", parent, err)
	}
	return cs
}

// A child's record names its parent, read back from its key; a run that
// is no child has none. Placing a trigger gives it the ID it is created
// with.
func childParent(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	c := h.child(parent.RunID, "a", "c")
	placed := c.RunID
	if err := h.e.PlaceRuns(h.ctx, []*engine.EnqueueParams{c}); err != nil || c.RunID != placed {
		h.Fatalf("placed again: %q, %v; want %q", c.RunID, err, placed)
	}
	if r := h.enqueue(c); !r.Accepted || c.RunID != placed {
		h.Fatalf("child created as %q (%+v), placed as %q", c.RunID, r, placed)
	}
	if got := h.run(c.RunID).Parent; got != parent.RunID {
		h.Fatalf("child's parent = %q, want %q", got, parent.RunID)
	}
	if got := h.run(parent.RunID).Parent; got != "" {
		h.Fatalf("parent's parent = %q", got)
	}
	if got := engine.ParentOf(engine.ChildKey("p1", "n", "order:1/x")); got != "p1" {
		h.Fatalf("ParentOf = %q", got)
	}
	for _, k := range []string{"order:1", engine.ChildKeyPrefix + "p1", engine.ChildKeyPrefix + "/n"} {
		if got := engine.ParentOf(k); got != "" {
			h.Fatalf("ParentOf(%q) = %q, want none", k, got)
		}
	}
}

// A name recorded twice keeps its first record, in one call or two, and
// the parent says it has children; the children read back in the order
// of their names, positions as numbers.
func childFirstRecord(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	if h.run(parent.RunID).HasChildren {
		h.Fatal("a run that recorded no child has children")
	}
	first := engine.Child{Name: "#10", RunID: "r1", Task: "c", Key: "k1"}
	cs, err := h.e.RecordChildren(h.ctx, parent.RunID, []engine.Child{
		first, {Name: "#2", RunID: "r2", Task: "c", Key: "k2"}, {Name: "#10", RunID: "r3", Task: "d", Key: "k3"},
	})
	if err != nil || len(cs) != 3 || cs[0] != first || cs[1].RunID != "r2" || cs[2] != first {
		h.Fatalf("record = %+v, %v; want #10 kept as first recorded", cs, err)
	}
	cs, err = h.e.RecordChildren(h.ctx, parent.RunID, []engine.Child{{Name: "#10", RunID: "r4", Task: "c", Key: "k1"},
		{Name: "named", RunID: "r5", Task: "c", Key: "k5", Detached: true}})
	if err != nil || cs[0] != first || cs[1].RunID != "r5" || !cs[1].Detached {
		h.Fatalf("record again = %+v, %v", cs, err)
	}
	got := h.children(parent.RunID)
	if fmt.Sprint(names(got)) != "[#2 #10 named]" || got[1] != first {
		h.Fatalf("children = %+v, want #2, #10, named", got)
	}
	if !h.run(parent.RunID).HasChildren {
		h.Fatal("the parent does not say it has children")
	}
	if cs := h.children("no-such-run"); len(cs) != 0 {
		h.Fatalf("children of a missing run = %+v", cs)
	}
}

func names(cs []engine.Child) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// A parent that has ended records no child, nor does a run that does not
// exist.
func childEndedParent(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	if _, err := h.e.Cancel(h.ctx, parent.RunID, "by test", h.now); err != nil {
		h.Fatal(err)
	}
	c := engine.Child{Name: "a", RunID: "r1", Task: "c", Key: "k"}
	if _, err := h.e.RecordChildren(h.ctx, parent.RunID, []engine.Child{c}); !errors.Is(err, engine.ErrRunEnded) {
		h.Fatalf("record under a cancelled parent = %v, want ErrRunEnded", err)
	}
	if cs := h.children(parent.RunID); len(cs) != 0 {
		h.Fatalf("children recorded under a cancelled parent: %+v", cs)
	}
	if _, err := h.e.RecordChildren(h.ctx, h.id("missing"), []engine.Child{c}); !errors.Is(err, engine.ErrRunNotFound) {
		h.Fatalf("record under a missing parent = %v, want ErrRunNotFound", err)
	}
}

// Marking a child created changes its record alone, also after its
// parent ended, and records no name that was not recorded.
func childMark(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	d, st := h.running(parent, "w")
	a, b := h.child(parent.RunID, "a", "c"), h.child(parent.RunID, "b", "c")
	h.record(parent.RunID, false, a, b)
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	c := h.child(parent.RunID, "c", "c")
	if err := h.e.MarkChildrenCreated(h.ctx, parent.RunID, []engine.Child{childOf(a, false), childOf(c, false)}); err != nil {
		h.Fatal(err)
	}
	got := h.children(parent.RunID)
	if len(got) != 2 || !got[0].Created || got[0].RunID != a.RunID || got[1].Created {
		h.Fatalf("children = %+v, want a created and b not, and no c", got)
	}
}

// Cancelling a parent and then its children cancels each child that is
// not detached, and the children of those; a child that ended stays as
// it was; the parent leaves the cascades, so recovery finds nothing.
func childCascade(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	a, b, det, done := h.child(parent.RunID, "a", "c"), h.child(parent.RunID, "b", "c"), h.child(parent.RunID, "d", "c"),
		h.child(parent.RunID, "e", "e")
	h.record(parent.RunID, false, a, b, done)
	h.record(parent.RunID, true, det)
	for _, p := range []*engine.EnqueueParams{a, b, det} {
		h.enqueue(p)
	}
	dd, st := h.running(done, "w")
	h.finish(h.outcome(dd, st, engine.OutcomeSucceeded, "{}"))
	grand := h.child(a.RunID, "g", "c")
	h.record(a.RunID, false, grand)
	h.enqueue(grand)
	if err := h.e.MarkChildrenCreated(h.ctx, parent.RunID, []engine.Child{childOf(a, false), childOf(b, false)}); err != nil {
		h.Fatal(err)
	}

	if r, err := h.e.Cancel(h.ctx, parent.RunID, "by test", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	res, err := h.e.CancelChildren(h.ctx, parent.RunID, h.now)
	if err != nil || res.Cancelled != 3 || res.Pending != 0 {
		h.Fatalf("cascade = %+v, %v; want a, b and a's child cancelled", res, err)
	}
	for id, want := range map[string]string{a.RunID: engine.StatusCancelled, b.RunID: engine.StatusCancelled,
		grand.RunID: engine.StatusCancelled, det.RunID: engine.StatusQueued, done.RunID: engine.StatusSucceeded} {
		if got := h.status(id); got != want {
			h.Fatalf("run %s is %s, want %s", id, got, want)
		}
	}
	if r := h.run(a.RunID); r.Error != "parent run "+parent.RunID+" was cancelled" {
		h.Fatalf("cancelled child's error = %q", r.Error)
	}
	if res, err := h.e.CancelChildren(h.ctx, parent.RunID, h.now); err != nil || res.Cancelled != 0 {
		h.Fatalf("second cascade = %+v, %v; want nothing more", res, err)
	}
	if taken, done, err := h.e.RecoverCascades(h.ctx, h.now.Add(time.Hour), engine.CascadeGrace, 100); err != nil || taken != 0 || done != 0 {
		h.Fatalf("recovery took %d, finished %d, %v; want nothing left", taken, done, err)
	}
}

// A child recorded before its parent's cancel but created after the
// cascade ran is cancelled by recovery, which then has nothing left.
func childCascadeLate(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	late := h.child(parent.RunID, "a", "c")
	h.record(parent.RunID, false, late)
	if _, err := h.e.Cancel(h.ctx, parent.RunID, "by test", h.now); err != nil {
		h.Fatal(err)
	}
	res, err := h.e.CancelChildren(h.ctx, parent.RunID, h.now)
	if err != nil || res.Cancelled != 0 || res.Pending != 1 {
		h.Fatalf("cascade = %+v, %v; want the child pending", res, err)
	}
	h.enqueue(late)
	if taken, _, err := h.e.RecoverCascades(h.ctx, h.now, engine.CascadeGrace, 100); err != nil || taken != 0 {
		h.Fatalf("recovery within the grace took %d, %v", taken, err)
	}
	later := h.now.Add(engine.CascadeGrace)
	if taken, done, err := h.e.RecoverCascades(h.ctx, later, engine.CascadeGrace, 100); err != nil || taken != 1 || done != 1 {
		h.Fatalf("recovery took %d, finished %d, %v; want the cascade", taken, done, err)
	}
	if got := h.status(late.RunID); got != engine.StatusCancelled {
		h.Fatalf("late child is %s, want cancelled", got)
	}
	if taken, _, err := h.e.RecoverCascades(h.ctx, later.Add(time.Hour), engine.CascadeGrace, 100); err != nil || taken != 0 {
		h.Fatalf("second recovery took %d, %v", taken, err)
	}
}

// A parent superseded (cancelled by a script, which no canceller
// follows) has its children cancelled by recovery.
func childCascadeSuperseded(h *h) {
	parent := h.params("p", "k", engine.StrategyStatus)
	h.enqueue(parent)
	c := h.child(parent.RunID, "a", "c")
	h.record(parent.RunID, false, c)
	h.enqueue(c)
	sup := h.params("p", "k", engine.StrategyStatus)
	sup.Policy = engine.PolicySupersede
	if r := h.enqueue(sup); r.Superseded != parent.RunID {
		h.Fatalf("supersede = %+v", r)
	}
	if taken, done, err := h.e.RecoverCascades(h.ctx, h.now.Add(engine.CascadeGrace), engine.CascadeGrace, 100); err != nil ||
		taken != 1 || done != 1 {
		h.Fatalf("recovery took %d, finished %d, %v; want the superseded parent's cascade", taken, done, err)
	}
	if got := h.status(c.RunID); got != engine.StatusCancelled {
		h.Fatalf("child of the superseded parent is %s, want cancelled", got)
	}
}

// A child recorded but never created keeps its parent's cascade pending
// for SpawnGrace after the cancel, then recovery gives it up.
func childCascadeGivesUp(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	h.enqueue(parent)
	h.record(parent.RunID, false, h.child(parent.RunID, "a", "c"))
	if _, err := h.e.Cancel(h.ctx, parent.RunID, "by test", h.now); err != nil {
		h.Fatal(err)
	}
	soon := h.now.Add(engine.CascadeGrace)
	if taken, done, err := h.e.RecoverCascades(h.ctx, soon, engine.CascadeGrace, 100); err != nil || taken != 1 || done != 0 {
		h.Fatalf("recovery took %d, finished %d, %v; want it taken and left pending", taken, done, err)
	}
	if taken, _, err := h.e.RecoverCascades(h.ctx, soon, engine.CascadeGrace, 100); err != nil || taken != 0 {
		h.Fatalf("recovery within the grace of the last took %d, %v", taken, err)
	}
	late := h.now.Add(engine.SpawnGrace + time.Second)
	if taken, done, err := h.e.RecoverCascades(h.ctx, late, engine.CascadeGrace, 100); err != nil || taken != 1 || done != 1 {
		h.Fatalf("recovery past the spawn grace took %d, finished %d, %v; want it given up", taken, done, err)
	}
	if taken, _, err := h.e.RecoverCascades(h.ctx, late.Add(time.Hour), engine.CascadeGrace, 100); err != nil || taken != 0 {
		h.Fatalf("recovery after giving up took %d, %v", taken, err)
	}
}

// A parent's children go with its record at the end of its retention.
func childExpire(h *h) {
	parent := h.params("p", "", engine.StrategyNone)
	parent.Retention = time.Millisecond
	d, st := h.running(parent, "w")
	h.record(parent.RunID, false, h.child(parent.RunID, "a", "c"))
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	h.eventually("the parent's children expire with its record", func() bool {
		h.elapse(50 * time.Millisecond)
		return len(h.children(parent.RunID)) == 0
	})
}
