package enginetest

import (
	"bytes"
	"errors"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var triggerCases = []suiteCase{
	{"EnqueueCreatesAQueuedRunAndClaimsItsKey", enqueueCreates},
	{"DuplicateIsRejectedNamingTheOwner", duplicateRejected},
	{"RunWithoutKeyClaimsNothing", runWithoutKey},
	{"ResendIsAnsweredWithTheFirstOutcome", resendAnswered},
	{"BatchAnswersEachTriggerInOrder", batchInOrder},
	{"ConcurrentTriggersOfOneKeyCreateOneRun", concurrentOneKey},
	{"PoliciesWhenTheKeyIsHeld", policies},
	{"DebounceHandsTheInputToTheWaitingRun", debounce},
	{"DelayedRunWaitsUntilDue", delayed},
	{"DelaysInABatchAreEachTriggersOwn", delayedBatch},
	{"CheckDurabilityWithoutDurability", checkDurability},
	{"LinkRetryLinksOnce", linkRetry},
}

func enqueueCreates(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	r := h.enqueue(p)
	if !r.Accepted || r.Outcome != engine.TriggerCreated || r.EntryID == "" || r.Ack != nil {
		h.Fatalf("enqueue = %+v, want created with an entry and no ack", r)
	}
	run := h.run(p.RunID)
	if run.ID != p.RunID || run.Status != engine.StatusQueued || run.Task != "t" || run.Key != "k" ||
		run.Strategy != engine.StrategyStatus || !bytes.Equal(run.Input, p.Input) || !bytes.Equal(run.Meta, p.Meta) ||
		run.Retries != 1 || run.Hold != time.Minute || run.Attempt != 0 || !ms(run.Created, h.now) {
		h.Fatalf("run = %+v, want it queued as triggered", run)
	}
	if st, err := h.e.RunStatus(h.ctx, p.RunID); err != nil || st != engine.StatusQueued {
		h.Fatalf("run status = %q, %v", st, err)
	}
	ks, held := h.key("k")
	if !held || ks.Owner != p.RunID || ks.TTL <= 0 || ks.TTL > time.Minute {
		h.Fatalf("key = %+v, held %v; want owned by %s for at most the hold", ks, held, p.RunID)
	}
	d := h.only(h.read("t", "w"), p.RunID)
	if d.Task != "t" || d.EntryID != r.EntryID || d.Redelivered {
		h.Fatalf("delivery = %+v, want the trigger's entry %s", d, r.EntryID)
	}
	st := h.start("w", d)
	if !st.Started || st.Spec == nil || !bytes.Equal(st.Spec.Input, p.Input) || st.Spec.Key != "k" ||
		st.Spec.Retries != 1 || st.Spec.MaxDeliveries != 5 || st.Spec.Retention != time.Hour {
		h.Fatalf("start = %+v, want the run's spec", st)
	}
}

func duplicateRejected(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	h.enqueue(p)
	dup := h.params("t", "k", engine.StrategyStatus)
	r := h.enqueue(dup)
	if r.Accepted || r.Outcome != engine.TriggerRejected || r.Owner != p.RunID || r.OwnerTTL <= 0 || r.OwnerTTL > time.Minute {
		h.Fatalf("duplicate = %+v, want rejected naming %s", r, p.RunID)
	}
	if _, err := h.e.GetRun(h.ctx, dup.RunID); !errors.Is(err, engine.ErrRunNotFound) {
		h.Fatalf("the duplicate's run: %v, want ErrRunNotFound", err)
	}
	h.only(h.read("t", "w"), p.RunID)
}

func runWithoutKey(h *h) {
	for range 2 {
		if r := h.enqueue(h.params("t", "", engine.StrategyNone)); !r.Accepted {
			h.Fatalf("trigger without a key = %+v", r)
		}
	}
	if keys := scanAll(h, "*", 100); len(keys) != 0 {
		h.Fatalf("keys held without a strategy: %v", keys)
	}
	if n := len(h.read("t", "w")); n != 2 {
		h.Fatalf("%d deliveries, want 2", n)
	}
}

// A trigger sent again (its reply was lost) reports what the first send
// did, not a collision with itself; another trigger under a taken run ID
// is refused.
func resendAnswered(h *h) {
	for _, strat := range []engine.Strategy{engine.StrategyStatus, engine.StrategyNone} {
		p := h.params("resend", "k-"+string(strat), strat)
		first := h.enqueue(p)
		again := h.enqueue(p)
		if !again.Accepted || again.EntryID != first.EntryID {
			h.Fatalf("%s: resend = %+v, want the first send's %+v", strat, again, first)
		}
	}
	if n := len(h.read("resend", "w")); n != 2 {
		h.Fatalf("%d deliveries of two runs sent twice, want 2", n)
	}
	p := h.params("resend", "", engine.StrategyNone)
	h.enqueue(p)
	other := *p
	other.Task = "other"
	if _, err := h.e.Enqueue(h.ctx, &other); err == nil {
		h.Fatal("a trigger of another task under a taken run ID was accepted")
	}
}

func batchInOrder(h *h) {
	taken := h.params("t", "", engine.StrategyNone)
	h.enqueue(taken)
	reused := *taken
	reused.Task = "other"
	ps := []*engine.EnqueueParams{
		h.params("t", "a", engine.StrategyTTL), h.params("t", "b", engine.StrategyTTL),
		h.params("t", "a", engine.StrategyTTL), &reused, h.params("t", "", engine.StrategyNone),
	}
	rs, errs := h.e.EnqueueBatch(h.ctx, ps)
	if len(rs) != len(ps) || len(errs) != len(ps) {
		h.Fatalf("%d results, %d errors for %d triggers", len(rs), len(errs), len(ps))
	}
	for _, i := range []int{0, 1, 2, 4} {
		if errs[i] != nil {
			h.Fatalf("trigger %d: %v", i, errs[i])
		}
	}
	if !rs[0].Accepted || !rs[1].Accepted || rs[2].Accepted || rs[2].Owner != ps[0].RunID || !rs[4].Accepted {
		h.Fatalf("results = %+v; want a, b created, the second a rejected naming the first", rs)
	}
	if errs[3] == nil {
		h.Fatalf("a trigger under a taken run ID: %+v, want an error of its own", rs[3])
	}
	if got := ids(h.read("t", "w")); len(got) != 4 {
		h.Fatalf("deliveries of %v, want the 4 runs created", got)
	}
}

// 32 triggers of one key at once: exactly one creates its run, and every
// other is answered with that run.
func concurrentOneKey(h *h) {
	const n = 32
	ps := make([]*engine.EnqueueParams, n)
	for i := range ps {
		ps[i] = h.params("t", "hot", engine.StrategyStatus)
	}
	rs := make([]engine.EnqueueResult, n)
	errs := make([]error, n)
	race(len(ps), func(i int) {
		rs[i], errs[i] = h.e.Enqueue(h.ctx, ps[i])
	})
	winner := ""
	for i := range rs {
		if errs[i] != nil {
			h.Fatalf("trigger %d: %v", i, errs[i])
		}
		if rs[i].Accepted {
			if winner != "" {
				h.Fatalf("two triggers of one key created runs: %s and %s", winner, ps[i].RunID)
			}
			winner = ps[i].RunID
		}
	}
	if winner == "" {
		h.Fatal("no trigger created a run")
	}
	for i := range rs {
		if !rs[i].Accepted && (rs[i].Outcome != engine.TriggerRejected || rs[i].Owner != winner) {
			h.Fatalf("trigger %d = %+v, want rejected naming %s", i, rs[i], winner)
		}
	}
	if n, err := h.e.IndexedRuns(h.ctx); err != nil || n != 1 {
		h.Fatalf("indexed runs = %d, %v; want 1", n, err)
	}
	h.only(h.read("t", "w"), winner)
}

func policies(h *h) {
	owner := h.params("t", "k", engine.StrategyStatus)
	h.enqueue(owner)

	attach := h.params("t", "k", engine.StrategyStatus)
	attach.Policy = engine.PolicyAttach
	if r := h.enqueue(attach); r.Accepted || r.Outcome != engine.TriggerAttached || r.Owner != owner.RunID {
		h.Fatalf("attach = %+v, want attached to %s", r, owner.RunID)
	}

	sig := h.params("t", "k", engine.StrategyStatus)
	sig.Policy, sig.SignalID = engine.PolicySignal, "sig-1"
	if r := h.enqueue(sig); r.Accepted || r.Outcome != engine.TriggerSignalled || r.Owner != owner.RunID || r.SignalID != "sig-1" {
		h.Fatalf("signal = %+v, want signalled to %s", r, owner.RunID)
	}
	// Sent again (its reply was lost): the same answer, one signal.
	if r := h.enqueue(sig); r.Outcome != engine.TriggerSignalled || r.SignalID != "sig-1" {
		h.Fatalf("signal again = %+v", r)
	}
	sigs, err := h.e.ReadSignals(h.ctx, owner.RunID, "", 10, -1)
	if err != nil || len(sigs) != 1 || sigs[0].ID != "sig-1" || !bytes.Equal(sigs[0].Payload, sig.Input) {
		h.Fatalf("owner's signals = %+v, %v; want sig-1 with the trigger's input", sigs, err)
	}

	sup := h.params("t", "k", engine.StrategyStatus)
	sup.Policy = engine.PolicySupersede
	if r := h.enqueue(sup); !r.Accepted || r.Outcome != engine.TriggerCreated || r.Superseded != owner.RunID {
		h.Fatalf("supersede = %+v, want created, superseding %s", r, owner.RunID)
	}
	st, err := h.e.RunStates(h.ctx, []string{owner.RunID})
	if err != nil || st[0].Status != engine.StatusCancelled || st[0].Error != "superseded by run "+sup.RunID {
		h.Fatalf("superseded run = %+v, %v", st, err)
	}
	if ks, held := h.key("k"); !held || ks.Owner != sup.RunID {
		h.Fatalf("key = %+v, want owned by %s", ks, sup.RunID)
	}
}

func debounce(h *h) {
	first := h.params("d", "deb", engine.StrategyDebounce)
	if r := h.enqueue(first); !r.Accepted {
		h.Fatalf("first = %+v", r)
	}
	if ds := h.read("d", "w"); len(ds) != 0 {
		h.Fatalf("a debounced run was delivered before its window: %+v", ds)
	}
	second := h.params("d", "deb", engine.StrategyDebounce)
	second.Now = h.now.Add(time.Second)
	r := h.enqueue(second)
	if r.Accepted || r.Outcome != engine.TriggerDebounced || r.Owner != first.RunID {
		h.Fatalf("second = %+v, want debounced to %s", r, first.RunID)
	}
	if in := h.run(first.RunID).Input; !bytes.Equal(in, second.Input) {
		h.Fatalf("waiting run's input = %s, want the later trigger's %s", in, second.Input)
	}
	due := second.Now.Add(second.Hold)
	if _, dues, err := h.e.GetRuns(h.ctx, []string{first.RunID}); err != nil || !ms(dues[0], due) {
		h.Fatalf("due = %v, %v; want the window restarted, to %v", dues, err, due)
	}
	if n := h.promote(due.Add(-time.Millisecond)); n != 0 {
		h.Fatalf("promoted %d before the window closed", n)
	}
	if n := h.promote(due); n != 1 {
		h.Fatalf("promoted %d when the window closed, want 1", n)
	}
	h.only(h.read("d", "w"), first.RunID)
}

func delayed(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	p.Delay, p.Hold = time.Hour, p.Hold+time.Hour
	r := h.enqueue(p)
	if !r.Accepted || r.EntryID != "" {
		h.Fatalf("delayed enqueue = %+v, want created with no entry yet", r)
	}
	if st := h.status(p.RunID); st != engine.StatusQueued {
		h.Fatalf("status = %q, want queued", st)
	}
	if ds := h.read("t", "w"); len(ds) != 0 {
		h.Fatalf("delivered before due: %+v", ds)
	}
	if ks, held := h.key("k"); !held || ks.Owner != p.RunID || ks.TTL <= time.Hour {
		h.Fatalf("key = %+v, want claimed now for past the due time", ks)
	}
	if dup := h.enqueue(h.params("t", "k", engine.StrategyStatus)); dup.Accepted || dup.Owner != p.RunID {
		h.Fatalf("duplicate before due = %+v, want rejected naming %s", dup, p.RunID)
	}
	due := h.now.Add(time.Hour)
	part := h.partOf(p.RunID)
	moved, next, err := h.e.PromoteDue(h.ctx, part, h.now.Add(time.Minute), 10)
	if err != nil || moved != 0 || !ms(next, due) {
		h.Fatalf("promote before due = %d, next %v, %v; want 0, next %v", moved, next, err, due)
	}
	moved, next, err = h.e.PromoteDue(h.ctx, part, due, 10)
	if err != nil || moved != 1 || !next.IsZero() {
		h.Fatalf("promote when due = %d, next %v, %v; want 1 and none left", moved, next, err)
	}
	if st := h.start("w", h.only(h.read("t", "w"), p.RunID)); !st.Started || st.Attempt != 1 {
		h.Fatalf("start once due = %+v", st)
	}
}

func delayedBatch(h *h) {
	later, now, dup, soon := h.params("t", "a", engine.StrategyTTL), h.params("t", "b", engine.StrategyTTL),
		h.params("t", "a", engine.StrategyTTL), h.params("t", "c", engine.StrategyTTL)
	later.Delay, soon.Delay = time.Hour, time.Minute
	rs, errs := h.e.EnqueueBatch(h.ctx, []*engine.EnqueueParams{later, now, dup, soon})
	if err := errors.Join(errs...); err != nil {
		h.Fatal(err)
	}
	if !rs[0].Accepted || rs[0].EntryID != "" || !rs[1].Accepted || rs[1].EntryID == "" || !rs[3].Accepted || rs[3].EntryID != "" {
		h.Fatalf("results = %+v", rs)
	}
	if rs[2].Accepted || rs[2].Owner != later.RunID {
		h.Fatalf("duplicate of the delayed run's key = %+v", rs[2])
	}
	_, dues, err := h.e.GetRuns(h.ctx, []string{later.RunID, now.RunID, soon.RunID})
	if err != nil || !ms(dues[0], h.now.Add(time.Hour)) || !dues[1].IsZero() || !ms(dues[2], h.now.Add(time.Minute)) {
		h.Fatalf("dues = %v, %v; want each trigger's own delay", dues, err)
	}
	h.only(h.read("t", "w"), now.RunID)
}

func checkDurability(h *h) {
	if err := h.e.CheckDurability(h.ctx, engine.Durability{}); err != nil {
		h.Fatalf("CheckDurability of no durability: %v", err)
	}
}

// LinkRetry writes both sides of the link once, keeps a link that names
// another run, and never creates a record.
func linkRetry(h *h) {
	of, retry, other := h.params("t", "", engine.StrategyNone), h.params("t", "", engine.StrategyNone), h.params("t", "", engine.StrategyNone)
	for _, p := range []*engine.EnqueueParams{of, retry, other} {
		h.enqueue(p)
	}
	for range 2 { // the same link again is no change
		if existing, err := h.e.LinkRetry(h.ctx, of.RunID, retry.RunID); err != nil || existing != "" {
			h.Fatalf("link = %q, %v", existing, err)
		}
	}
	if r := h.run(retry.RunID); r.RetryOf != of.RunID || r.RetriedBy != "" {
		h.Fatalf("the retry's record = %+v, want retry of %s", r, of.RunID)
	}
	if r := h.run(of.RunID); r.RetriedBy != retry.RunID || r.RetryOf != "" {
		h.Fatalf("the retried record = %+v, want retried by %s", r, retry.RunID)
	}
	if existing, err := h.e.LinkRetry(h.ctx, of.RunID, other.RunID); err != nil || existing != retry.RunID {
		h.Fatalf("a second retry's link = %q, %v; want it to name %s", existing, err, retry.RunID)
	}
	if r := h.run(of.RunID); r.RetriedBy != retry.RunID {
		h.Fatalf("the first link was overwritten: retried by %s", r.RetriedBy)
	}
	if _, err := h.e.LinkRetry(h.ctx, "never-was", other.RunID); err != nil {
		h.Fatal(err)
	}
	if _, err := h.e.GetRun(h.ctx, "never-was"); !errors.Is(err, engine.ErrRunNotFound) {
		h.Fatalf("a link created a record: %v", err)
	}
}
