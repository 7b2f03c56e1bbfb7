package enginetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var runCases = []suiteCase{
	{"MissingRunIsNotFound", missingRun},
	{"GetRunsAnswersInOrder", getRuns},
	{"RunStatesAndTaskStatuses", runStates},
	{"AttemptHistoryRecordsRetriesLapsesAndFailures", attemptHistory},
	{"SucceededRunHasNoAttemptHistory", noHistory},
	{"AttemptHistoryKeepsTheLatest", historyCapped},
	{"PartsCountSignalsAndSteps", parts},
	{"ListingsAreNewestFirst", listings},
	{"CancelEndsARunOnce", cancelOnce},
	{"CancelOfAScheduledRun", cancelScheduled},
	{"RescheduleMovesAScheduledRunOnly", reschedule},
	{"SweepRemovesOnlyExpiredRuns", sweepRuns},
	{"DoneTopicAnnouncesAWatchedRunsEnd", doneTopic},
	{"FinishedCountsAreAnnounced", finishedCounts},
}

func missingRun(h *h) {
	for _, id := range []string{"no-such-run", "no-such-run.999999", "x.y"} {
		if _, err := h.e.GetRun(h.ctx, id); !errors.Is(err, engine.ErrRunNotFound) {
			h.Fatalf("GetRun(%q) = %v, want ErrRunNotFound", id, err)
		}
		if _, err := h.e.RunStatus(h.ctx, id); !errors.Is(err, engine.ErrRunNotFound) {
			h.Fatalf("RunStatus(%q) = %v, want ErrRunNotFound", id, err)
		}
		if _, err := h.e.WatchRun(h.ctx, id); !errors.Is(err, engine.ErrRunNotFound) {
			h.Fatalf("WatchRun(%q) = %v, want ErrRunNotFound", id, err)
		}
		if r, err := h.e.Cancel(h.ctx, id, "r", h.now); err != nil || r.Written || r.Status != "missing" {
			h.Fatalf("Cancel(%q) = %+v, %v; want missing", id, r, err)
		}
		if r, err := h.e.Reschedule(h.ctx, id, h.now); err != nil || r.Moved || r.Why != "missing" {
			h.Fatalf("Reschedule(%q) = %+v, %v; want missing", id, r, err)
		}
		if as, err := h.e.ReadAttempts(h.ctx, id); err != nil || len(as) != 0 {
			h.Fatalf("ReadAttempts(%q) = %+v, %v", id, as, err)
		}
	}
}

// GetRuns answers in the order asked, nil for a run that does not exist,
// with when a run waiting for its time falls due (zero for one that waits
// for nothing).
func getRuns(h *h) {
	now, later := h.params("t", "", engine.StrategyNone), h.params("t", "", engine.StrategyNone)
	later.Delay = time.Hour
	h.enqueue(now)
	h.enqueue(later)
	runs, dues, err := h.e.GetRuns(h.ctx, []string{later.RunID, "no-such-run", now.RunID})
	if err != nil || len(runs) != 3 || len(dues) != 3 {
		h.Fatalf("GetRuns = %v, %v, %v", runs, dues, err)
	}
	if runs[0] == nil || runs[0].ID != later.RunID || runs[1] != nil || runs[2] == nil || runs[2].ID != now.RunID {
		h.Fatalf("runs = %+v, want [%s nil %s]", runs, later.RunID, now.RunID)
	}
	if !ms(dues[0], h.now.Add(time.Hour)) || !dues[2].IsZero() {
		h.Fatalf("dues = %v, want the delayed run's and none", dues)
	}
	if runs, _, err := h.e.GetRuns(h.ctx, nil); err != nil || len(runs) != 0 {
		h.Fatalf("GetRuns of none = %v, %v", runs, err)
	}
}

func runStates(h *h) {
	queued, cancelled := h.params("a", "", engine.StrategyNone), h.params("b", "", engine.StrategyNone)
	h.enqueue(queued)
	h.enqueue(cancelled)
	if _, err := h.e.Cancel(h.ctx, cancelled.RunID, "superseded by run x", h.now); err != nil {
		h.Fatal(err)
	}
	ids := []string{queued.RunID, cancelled.RunID, "no-such-run"}
	st, err := h.e.RunStates(h.ctx, ids)
	if err != nil || len(st) != 3 || st[0] != (engine.RunState{Status: engine.StatusQueued}) ||
		st[1] != (engine.RunState{Status: engine.StatusCancelled, Error: "superseded by run x"}) || st[2] != (engine.RunState{}) {
		h.Fatalf("states = %+v, %v", st, err)
	}
	ts, err := h.e.RunTaskStatuses(h.ctx, ids)
	if err != nil || len(ts) != 3 || ts[0] != (engine.RunTaskStatus{Task: "a", Status: engine.StatusQueued}) ||
		ts[1] != (engine.RunTaskStatus{Task: "b", Status: engine.StatusCancelled}) || ts[2] != (engine.RunTaskStatus{}) {
		h.Fatalf("task statuses = %+v, %v", ts, err)
	}
}

func attemptsText(as []engine.Attempt) string {
	s := ""
	for _, a := range as {
		s += fmt.Sprintf("[%d %s %d-%d %s %q]", a.Number, a.Outcome, a.Began.UnixMilli(), a.Ended.UnixMilli(), a.Consumer, a.Error)
	}
	return s
}

// A run's attempt history holds each attempt that did not succeed, in
// order: a retry, a lapsed lease and the final failure, each with its
// times, worker and error; ReadParts returns the same.
func attemptHistory(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	p.Retries, p.MaxDeliveries = 5, 10
	h.enqueue(p)
	at := func(s int) time.Time { return h.now.Add(time.Duration(s) * time.Second) }
	d := h.only(h.read("t", "w1"), p.RunID)
	st := h.startAt("w1", d, at(1))
	fp := h.outcome(d, st, engine.OutcomeRetry, "boom <1>")
	fp.Now, fp.RetryAt = at(2), at(2)
	if r := h.finish(fp); !r.Written {
		h.Fatalf("retry = %+v", r)
	}
	if r := h.run(p.RunID); !r.HasAttempts {
		h.Fatalf("run %+v has no attempt history after a retry", r)
	}
	if n := h.promote(at(3)); n != 1 {
		h.Fatalf("promoted %d", n)
	}
	if st := h.startAt("w2", h.only(h.read("t", "w2"), p.RunID), at(3)); st.Attempt != 2 {
		h.Fatalf("second attempt = %+v", st)
	}
	d3 := h.only(h.claim("t", "w3", 0), p.RunID)
	st3 := h.startAt("w3", d3, at(4))
	if st3.Attempt != 3 {
		h.Fatalf("attempt after the lapse = %+v", st3)
	}
	fp = h.outcome(d3, st3, engine.OutcomeFailed, "boom 3")
	fp.Now = at(5)
	if r := h.finish(fp); !r.Written || r.Status != engine.StatusFailed {
		h.Fatalf("fail = %+v", r)
	}
	want := fmt.Sprintf("[1 retry %d-%d w1 %q][2 lapsed %d-%d w2 %q][3 failed %d-%d w3 %q]",
		at(1).UnixMilli(), at(2).UnixMilli(), "boom <1>",
		at(3).UnixMilli(), at(4).UnixMilli(), "lease lapsed: its worker stopped renewing it, and the run was delivered again",
		at(4).UnixMilli(), at(5).UnixMilli(), "boom 3")
	as, err := h.e.ReadAttempts(h.ctx, p.RunID)
	if err != nil || attemptsText(as) != want {
		h.Fatalf("attempts =\n%s, %v\nwant\n%s", attemptsText(as), err, want)
	}
	parts, err := h.e.ReadParts(h.ctx, h.run(p.RunID))
	if err != nil || attemptsText(parts.Attempts) != want || parts.Signals != 0 || parts.Steps != 0 {
		h.Fatalf("parts = %+v, %v", parts, err)
	}
}

// A run retried more than MaxAttemptRecords times keeps its latest
// MaxAttemptRecords attempts.
func historyCapped(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	total := engine.MaxAttemptRecords + 3
	p.Retries, p.MaxDeliveries = total+1, 0
	h.enqueue(p)
	for i := 1; i <= total; i++ {
		if i > 1 && h.promote(h.now.Add(time.Hour)) != 1 {
			h.Fatalf("retry %d not queued again", i)
		}
		d := h.only(h.read("t", "w"), p.RunID)
		if r := h.finish(h.outcome(d, h.start("w", d), engine.OutcomeRetry, fmt.Sprint("boom ", i))); !r.Written {
			h.Fatalf("retry %d = %+v", i, r)
		}
	}
	as, err := h.e.ReadAttempts(h.ctx, p.RunID)
	if err != nil || len(as) != engine.MaxAttemptRecords || as[0].Number != 4 || as[len(as)-1].Number != total ||
		as[len(as)-1].Error != fmt.Sprint("boom ", total) {
		h.Fatalf("history holds %d attempts, %v; want the latest %d, 4 to %d", len(as), err, engine.MaxAttemptRecords, total)
	}
}

func noHistory(h *h) {
	p := h.params("t", "", engine.StrategyNone)
	d, st := h.running(p, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "1"))
	r := h.run(p.RunID)
	if r.HasAttempts {
		h.Fatalf("run %+v has an attempt history", r)
	}
	if parts, err := h.e.ReadParts(h.ctx, r); err != nil || len(parts.Attempts) != 0 {
		h.Fatalf("parts = %+v, %v", parts, err)
	}
}

func parts(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	h.enqueue(p)
	for i := range 3 {
		if r, err := h.e.SignalRun(h.ctx, p.RunID, fmt.Sprint("sig-", i), []byte(fmt.Sprint(i)), 10); err != nil || !r.Delivered {
			h.Fatalf("signal = %+v, %v", r, err)
		}
	}
	for _, name := range []string{"b", "a"} {
		if _, err := h.e.SaveStepResult(h.ctx, p.RunID, name, []byte(`"`+name+`"`)); err != nil {
			h.Fatal(err)
		}
	}
	r := h.run(p.RunID)
	if !r.HasSignals || !r.HasSteps {
		h.Fatalf("run %+v does not say it has signals and steps", r)
	}
	parts, err := h.e.ReadParts(h.ctx, r)
	if err != nil || parts.Signals != 3 || parts.Steps != 2 || len(parts.Attempts) != 0 {
		h.Fatalf("parts = %+v, %v; want 3 signals, 2 steps", parts, err)
	}
	var steps []engine.Step
	cursor := uint64(0)
	for range 100 {
		page, next, err := h.e.ScanSteps(h.ctx, p.RunID, cursor, 1)
		if err != nil {
			h.Fatal(err)
		}
		steps = append(steps, page...)
		if cursor = next; cursor == 0 {
			break
		}
	}
	slices.SortFunc(steps, func(a, b engine.Step) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	if len(steps) != 2 || steps[0].Name != "a" || string(steps[1].Result) != `"b"` {
		h.Fatalf("steps = %+v", steps)
	}
	plain := h.params("t", "", engine.StrategyNone)
	h.enqueue(plain)
	if parts, err := h.e.ReadParts(h.ctx, h.run(plain.RunID)); err != nil || parts.Signals != 0 || parts.Steps != 0 || len(parts.Attempts) != 0 {
		h.Fatalf("parts of a plain run = %+v, %v", parts, err)
	}
}

func listings(h *h) {
	var want []string // newest first
	for i := range 5 {
		p := h.params("t", "", engine.StrategyNone)
		p.Now = h.now.Add(time.Duration(i) * time.Second)
		h.enqueue(p)
		want = append([]string{p.RunID}, want...)
	}
	if got, err := h.e.ListRunIDs(h.ctx, 0, 10); err != nil || !slices.Equal(got, want) {
		h.Fatalf("ListRunIDs = %v, %v; want %v", got, err, want)
	}
	if got, err := h.e.ListRunIDs(h.ctx, 1, 2); err != nil || !slices.Equal(got, want[1:3]) {
		h.Fatalf("ListRunIDs(1, 2) = %v, %v; want %v", got, err, want[1:3])
	}
	var paged []string
	var after *engine.IndexEntry
	for range 10 {
		page, err := h.e.PageRuns(h.ctx, after, 2)
		if err != nil {
			h.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			paged = append(paged, e.ID)
		}
		last := page[len(page)-1]
		after = &last
	}
	if !slices.Equal(paged, want) {
		h.Fatalf("PageRuns in pages of 2 = %v, want %v", paged, want)
	}
	if first, err := h.e.PageRuns(h.ctx, nil, 1); err != nil || len(first) != 1 || first[0].Score != h.now.Add(4*time.Second).UnixMilli() {
		h.Fatalf("newest entry = %+v, %v; want scored by its creation", first, err)
	}
	if n, err := h.e.IndexedRuns(h.ctx); err != nil || n != 5 {
		h.Fatalf("IndexedRuns = %d, %v", n, err)
	}
}

func cancelOnce(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	d, st := h.running(p, "w")
	if st, err := h.e.WatchRun(h.ctx, p.RunID); err != nil || st != engine.StatusRunning {
		h.Fatalf("watch = %q, %v", st, err)
	}
	done, err := h.e.DoneTopic(h.ctx, p.RunID)
	if err != nil {
		h.Fatal(err)
	}
	n := h.subscribe(done)
	fin, channels, err := h.e.SubscribeFinished(h.ctx)
	if err != nil {
		h.Fatal(err)
	}
	h.Cleanup(func() { _ = fin.Close() })
	h.subscribed(fin, channels)
	r, err := h.e.Cancel(h.ctx, p.RunID, "by test", h.now)
	if err != nil || !r.Written || r.Status != engine.StatusCancelled {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	if got := h.receive(n, 1); fmt.Sprint(got[done]) != "[cancelled]" {
		h.Fatalf("done notices = %v, want cancelled", got)
	}
	if got := h.receive(fin, 1); fmt.Sprint(flatten(got)) != "[cancelled 1]" {
		h.Fatalf("finished notices = %v, want one cancelled", got)
	}
	if _, held := h.key("k"); held {
		h.Fatal("cancel did not release the key")
	}
	if rs, _ := h.e.RunStates(h.ctx, []string{p.RunID}); rs[0].Error != "by test" {
		h.Fatalf("cancelled run's error = %q, want the reason", rs[0].Error)
	}
	if r, err := h.e.Cancel(h.ctx, p.RunID, "again", h.now); err != nil || r.Written || r.Status != engine.StatusCancelled {
		h.Fatalf("second cancel = %+v, %v", r, err)
	}
	if r := h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}")); r.Written {
		h.Fatal("a finish overwrote a cancelled run")
	}
	if reps, err := h.e.Heartbeat(h.ctx, "t", "w", []engine.Lease{{EntryID: d.EntryID, RunID: d.RunID, Attempt: st.Attempt}}); err != nil ||
		reps[0].State != engine.LeaseFinished || reps[0].Reason != "by test" {
		h.Fatalf("heartbeat of a cancelled run = %+v, %v", reps, err)
	}
}

func cancelScheduled(h *h) {
	p := h.params("t", "k", engine.StrategyStatus)
	p.Delay, p.Hold = time.Hour, p.Hold+time.Hour
	h.enqueue(p)
	if r, err := h.e.Cancel(h.ctx, p.RunID, "not wanted", h.now); err != nil || !r.Written {
		h.Fatalf("cancel = %+v, %v", r, err)
	}
	if _, held := h.key("k"); held {
		h.Fatal("the cancelled run's key is held")
	}
	if n := h.promote(h.now.Add(2 * time.Hour)); n != 0 {
		h.Fatalf("promoted %d cancelled runs", n)
	}
	if ds := h.read("t", "w"); len(ds) != 0 {
		h.Fatalf("a cancelled scheduled run was delivered: %+v", ds)
	}
}

func reschedule(h *h) {
	p := h.params("t", "k", engine.StrategyTTL)
	p.Delay, p.Hold = time.Hour, p.Hold+time.Hour
	h.enqueue(p)
	due := func() time.Time {
		_, dues, err := h.e.GetRuns(h.ctx, []string{p.RunID})
		if err != nil {
			h.Fatal(err)
		}
		return dues[0]
	}
	ks0, _ := h.key("k")
	later := h.now.Add(3 * time.Hour)
	if r, err := h.e.Reschedule(h.ctx, p.RunID, later); err != nil || !r.Moved || !ms(r.Previous, h.now.Add(time.Hour)) {
		h.Fatalf("reschedule later = %+v, %v", r, err)
	}
	if !ms(due(), later) {
		h.Fatalf("due = %v, want %v", due(), later)
	}
	if ks, _ := h.key("k"); ks.TTL < ks0.TTL+time.Hour {
		h.Fatalf("key TTL %v after moving the run two hours later, was %v: want it moved too", ks.TTL, ks0.TTL)
	}
	earlier := h.now.Add(time.Minute)
	if r, err := h.e.Reschedule(h.ctx, p.RunID, earlier); err != nil || !r.Moved {
		h.Fatalf("reschedule earlier = %+v, %v", r, err)
	}
	if n := h.promote(earlier.Add(-time.Second)); n != 0 {
		h.Fatalf("promoted %d before the new due time", n)
	}
	if n := h.promote(earlier); n != 1 {
		h.Fatalf("promoted %d at the new due time", n)
	}
	if r, err := h.e.Reschedule(h.ctx, p.RunID, later); err != nil || r.Moved || r.Why != "queued" {
		h.Fatalf("reschedule of a queued run = %+v, %v; want queued", r, err)
	}
	d := h.only(h.read("t", "w"), p.RunID)
	st := h.start("w", d)
	if r, err := h.e.Reschedule(h.ctx, p.RunID, later); err != nil || r.Moved || r.Why != engine.StatusRunning {
		h.Fatalf("reschedule of a running run = %+v, %v", r, err)
	}
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	if r, err := h.e.Reschedule(h.ctx, p.RunID, later); err != nil || r.Moved || r.Why != engine.StatusSucceeded {
		h.Fatalf("reschedule of an ended run = %+v, %v", r, err)
	}
	// A retry and a debounce window are not schedules.
	q := h.params("u", "kq", engine.StrategyStatus)
	dq, sq := h.running(q, "w")
	fp := h.outcome(dq, sq, engine.OutcomeRetry, "again")
	fp.RetryAt = h.now.Add(time.Hour)
	h.finish(fp)
	if r, err := h.e.Reschedule(h.ctx, q.RunID, h.now.Add(time.Minute)); err != nil || r.Moved || r.Why != "retrying" {
		h.Fatalf("reschedule of a retrying run = %+v, %v", r, err)
	}
	db := h.params("d", "kd", engine.StrategyDebounce)
	h.enqueue(db)
	if r, err := h.e.Reschedule(h.ctx, db.RunID, h.now.Add(time.Hour)); err != nil || r.Moved || r.Why != "debouncing" {
		h.Fatalf("reschedule of a debounced run = %+v, %v", r, err)
	}
}

// A run whose record expired after its retention leaves the index when
// swept; a live run stays.
func sweepRuns(h *h) {
	live := h.params("live", "", engine.StrategyNone)
	h.enqueue(live)
	gone := h.params("t", "", engine.StrategyNone)
	gone.Retention = time.Millisecond
	d, st := h.running(gone, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	h.eventually("the ended run's record expires", func() bool {
		h.elapse(50 * time.Millisecond)
		_, err := h.e.GetRun(h.ctx, gone.RunID)
		return errors.Is(err, engine.ErrRunNotFound)
	})
	removed, looked := 0, 0
	for part := range h.parts {
		r, l, err := h.e.SweepRuns(h.ctx, part, h.now.Add(time.Hour), 0, 100)
		if err != nil {
			h.Fatal(err)
		}
		removed, looked = removed+r, looked+l
	}
	if removed != 1 || looked != 2 {
		h.Fatalf("sweep removed %d of %d looked at, want 1 of 2", removed, looked)
	}
	if got, err := h.e.ListRunIDs(h.ctx, 0, 10); err != nil || !slices.Equal(got, []string{live.RunID}) {
		h.Fatalf("index = %v, %v; want the live run only", got, err)
	}
}

// A watched run's done topic carries its final status; a run not watched
// announces nothing there.
func doneTopic(h *h) {
	watched, unwatched := h.params("t", "", engine.StrategyNone), h.params("u", "", engine.StrategyNone)
	h.enqueue(watched)
	h.enqueue(unwatched)
	if st, err := h.e.WatchRun(h.ctx, watched.RunID); err != nil || st != engine.StatusQueued {
		h.Fatalf("watch = %q, %v", st, err)
	}
	wt, err := h.e.DoneTopic(h.ctx, watched.RunID)
	if err != nil {
		h.Fatal(err)
	}
	ut, err := h.e.DoneTopic(h.ctx, unwatched.RunID)
	if err != nil || ut == wt {
		h.Fatalf("done topics %q and %q, %v: want one per run", wt, ut, err)
	}
	n := h.subscribe(wt, ut)
	d, st := h.running(unwatched, "w")
	h.finish(h.outcome(d, st, engine.OutcomeSucceeded, "{}"))
	d, st = h.running(watched, "w")
	h.finish(h.outcome(d, st, engine.OutcomeFailed, "boom"))
	// Notices of one subscription arrive in order: one for the unwatched
	// run would come first.
	if got := h.receive(n, 1); fmt.Sprint(got) != fmt.Sprintf("map[%s:[failed]]", wt) {
		h.Fatalf("notices = %v, want %s: failed", got, wt)
	}
	if st, err := h.e.WatchRun(h.ctx, unwatched.RunID); err != nil || st != engine.StatusSucceeded {
		h.Fatalf("watch of an ended run = %q, %v", st, err)
	}
}

func finishedCounts(h *h) {
	n, channels, err := h.e.SubscribeFinished(h.ctx)
	if err != nil {
		h.Fatal(err)
	}
	h.Cleanup(func() { _ = n.Close() })
	if channels < 1 {
		h.Fatalf("subscribed to %d channels", channels)
	}
	h.subscribed(n, channels)
	var fps []*engine.FinishParams
	for i, o := range []engine.Outcome{engine.OutcomeSucceeded, engine.OutcomeFailed, engine.OutcomeSucceeded} {
		d, st := h.running(h.params(fmt.Sprint("t", i), "", engine.StrategyNone), "w")
		fps = append(fps, h.outcome(d, st, o, "{}"))
	}
	if _, errs := h.e.FinishBatch(h.ctx, fps); errors.Join(errs...) != nil {
		h.Fatal(errors.Join(errs...))
	}
	got := map[string]int{}
	timer := time.NewTimer(eventuallyWithin)
	defer timer.Stop()
	for got[engine.StatusSucceeded] < 2 || got[engine.StatusFailed] < 1 {
		select {
		case nt := <-n.C():
			if nt.Kind == engine.NoticeMessage {
				for s, c := range engine.ParseFinished(nt.Payload) {
					got[s] += c
				}
			}
		case <-timer.C:
			h.Fatalf("finished counts %v, want 2 succeeded and 1 failed", got)
		}
	}
	if len(got) != 2 || got[engine.StatusSucceeded] != 2 || got[engine.StatusFailed] != 1 {
		h.Fatalf("finished counts %v, want 2 succeeded and 1 failed", got)
	}
}
