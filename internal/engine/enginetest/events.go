package enginetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var eventCases = append(inSteps(
	suiteCase{"PushCreatesDeduplicatesAndRecordsErrors", pushEvent},
	suiteCase{"PushedRunIsTheRunEnqueueWrites", pushLikeEnqueue},
	suiteCase{"ResentPushAnswersTheFirstOutcome", pushResent},
	suiteCase{"BatchAndListings", pushBatch},
	suiteCase{"DebouncedTaskTakesTheLaterPayload", pushDebounce},
),
	suiteCase{"MissingEventIsNotFound", missingEvent},
	suiteCase{"EventsExpireAndAreSwept", eventRetention},
	suiteCase{"StoppedFanoutIsFinishedByRecovery", fanoutRecovery},
)

// inSteps runs each case twice: as the store pushes events, and with
// every fan-out sent through its steps (FanoutHooks.Steps), as when an
// event's runs live in other partitions than the event; the latter leaves
// nothing pending.
func inSteps(cs ...suiteCase) []suiteCase {
	var out []suiteCase
	for _, c := range cs {
		out = append(out, c, suiteCase{c.name + "InSteps", func(h *h) {
			h.e.SetFanoutHooks(&engine.FanoutHooks{Steps: true})
			c.fn(h)
			if taken, _, err := h.e.RecoverFanouts(h.ctx, time.Now().Add(2*engine.FanoutGrace), engine.FanoutGrace, 10); err != nil || taken != 0 {
				h.Fatalf("%d fan-outs left pending, %v", taken, err)
			}
		}})
	}
	return out
}

func (h *h) event(key string, tasks ...engine.EventTask) *engine.PushEventParams {
	return &engine.PushEventParams{ID: h.id("ev"), Key: key, Payload: []byte(`{"id":"1"}`), Meta: []byte(`{"tenant":"a"}`),
		Now: h.now, Retention: time.Hour, Tasks: tasks}
}

// eventRun is a subscribed task's run, with the event's input and meta.
func (h *h) eventRun(task, key string, strat engine.Strategy) engine.EventTask {
	p := h.params(task, key, strat)
	p.Input, p.Meta = []byte(`{"id":"1"}`), []byte(`{"tenant":"a"}`)
	return engine.EventTask{Run: p}
}

func (h *h) push(p *engine.PushEventParams) []engine.EventRun {
	h.Helper()
	runs, err := h.e.PushEvent(h.ctx, p)
	if err != nil {
		h.Fatalf("push event %s: %v", p.ID, err)
	}
	return runs
}

// A held key is not taken: no run, the event names the owner. Two tasks
// of one event with one key get one run between them. A task whose
// expression failed is recorded and the others still run.
func pushEvent(h *h) {
	held := h.params("other", "k-held", engine.StrategyTTL)
	h.enqueue(held)
	a := h.eventRun("a", "k-held", engine.StrategyTTL)
	b := h.eventRun("b", "k-same", engine.StrategyTTL)
	c := h.eventRun("c", "k-same", engine.StrategyStatus)
	d := engine.EventTask{Task: "d", Error: "evaluating input.missing: no such key"}
	e := h.eventRun("e", "", engine.StrategyNone)
	ev := h.event("user.created", a, b, c, d, e)
	runs := h.push(ev)
	want := []engine.EventRun{
		{Task: "a", Outcome: engine.EventRunDeduplicated, RunID: held.RunID, IdempotencyKey: "k-held"},
		{Task: "b", Outcome: engine.EventRunCreated, RunID: b.Run.RunID, IdempotencyKey: "k-same"},
		{Task: "c", Outcome: engine.EventRunDeduplicated, RunID: b.Run.RunID, IdempotencyKey: "k-same"},
		{Task: "d", Outcome: engine.EventRunError, Error: d.Error},
		{Task: "e", Outcome: engine.EventRunCreated, RunID: e.Run.RunID},
	}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		h.Fatalf("runs =\n %+v\nwant\n %+v", runs, want)
	}
	for _, gone := range []string{a.Run.RunID, c.Run.RunID} {
		if _, err := h.e.GetRun(h.ctx, gone); !errors.Is(err, engine.ErrRunNotFound) {
			h.Fatalf("run %s created although its key was held: %v", gone, err)
		}
	}
	if n, err := h.e.IndexedRuns(h.ctx); err != nil || n != 3 {
		h.Fatalf("indexed runs = %d, %v; want 3", n, err)
	}
	if ks, _ := h.key("k-same"); ks.Owner != b.Run.RunID {
		h.Fatalf("k-same = %+v, want owned by %s", ks, b.Run.RunID)
	}
	got, err := h.e.GetEvent(h.ctx, ev.ID)
	if err != nil {
		h.Fatal(err)
	}
	if got.ID != ev.ID || got.Key != "user.created" || string(got.Payload) != `{"id":"1"}` || string(got.Meta) != `{"tenant":"a"}` ||
		!ms(got.Created, h.now) || fmt.Sprint(got.Runs) != fmt.Sprint(want) || got.PendingFanout != "" {
		h.Fatalf("event = %+v", got)
	}
	if ds := h.read("b", "w"); len(ds) != 1 || ds[0].RunID != b.Run.RunID {
		h.Fatalf("deliveries of b = %+v", ds)
	}
}

func pushLikeEnqueue(h *h) {
	direct := h.params("mail", "direct", engine.StrategyStatus)
	direct.Input, direct.Meta = []byte(`{"id":"1"}`), []byte(`{"tenant":"a"}`)
	h.enqueue(direct)
	via := h.eventRun("mail", "via-event", engine.StrategyStatus)
	if runs := h.push(h.event("k", via)); len(runs) != 1 || runs[0].Outcome != engine.EventRunCreated {
		h.Fatalf("runs = %+v", runs)
	}
	a, b := *h.run(direct.RunID), *h.run(via.Run.RunID)
	a.ID, a.Key, b.ID, b.Key = "", "", "", ""
	if fmt.Sprint(a) != fmt.Sprint(b) {
		h.Fatalf("run records differ:\n enqueue: %+v\n event:   %+v", a, b)
	}
	if got := ids(h.read("mail", "w")); !slices.Equal(got, sorted(direct.RunID, via.Run.RunID)) {
		h.Fatalf("deliveries %v", got)
	}
}

func missingEvent(h *h) {
	for _, id := range []string{"no-such-event", "no-such-event.999999"} {
		if _, err := h.e.GetEvent(h.ctx, id); !errors.Is(err, engine.ErrEventNotFound) {
			h.Fatalf("GetEvent(%q) = %v, want ErrEventNotFound", id, err)
		}
	}
}

// A push sent again (its reply was lost) reports what the first did;
// another event under a taken ID is refused.
func pushResent(h *h) {
	p := h.event("k", h.eventRun("t", "key-1", engine.StrategyTTL))
	first := h.push(p)
	if again, err := h.e.PushEvent(h.ctx, p); err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
		h.Fatalf("resent push = %+v, %v; want %+v", again, err, first)
	}
	res, errs := h.e.PushEvents(h.ctx, []*engine.PushEventParams{p})
	if errs[0] != nil || fmt.Sprint(res[0]) != fmt.Sprint(first) {
		h.Fatalf("resent batch push = %+v, %v", res, errs)
	}
	if n, err := h.e.IndexedRuns(h.ctx); err != nil || n != 1 {
		h.Fatalf("%d runs, %v; want 1", n, err)
	}
	other := *p
	other.Payload = []byte(`{"id":"2"}`)
	if _, err := h.e.PushEvent(h.ctx, &other); err == nil {
		h.Fatal("another event under a taken ID was stored")
	}
}

func pushBatch(h *h) {
	first, second := h.eventRun("t", "same", engine.StrategyTTL), h.eventRun("t", "same", engine.StrategyTTL)
	e1, e2 := h.event("k", first), h.event("k", second)
	e2.Now = h.now.Add(time.Second)
	other := h.event("j")
	res, errs := h.e.PushEvents(h.ctx, []*engine.PushEventParams{e1, e2, other})
	if err := errors.Join(errs...); err != nil || len(res) != 3 {
		h.Fatalf("push events = %+v, %v", res, err)
	}
	if res[0][0].Outcome != engine.EventRunCreated || res[1][0].Outcome != engine.EventRunDeduplicated || res[1][0].RunID != first.Run.RunID {
		h.Fatalf("results = %+v", res)
	}
	evs, err := h.e.GetEvents(h.ctx, []string{e2.ID, "no-such-event", e1.ID})
	if err != nil {
		h.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		if ev != nil {
			got = append(got, ev.ID)
		}
	}
	if !slices.Equal(got, []string{e2.ID, e1.ID}) {
		h.Fatalf("GetEvents = %v, want %s and %s in the order asked", got, e2.ID, e1.ID)
	}
	if ids, err := h.e.ListEventIDs(h.ctx, "k", 0, 10); err != nil || !slices.Equal(ids, []string{e2.ID, e1.ID}) {
		h.Fatalf("events of k = %v, %v; want newest first", ids, err)
	}
	if ids, err := h.e.ListEventIDs(h.ctx, "", 0, 10); err != nil || len(ids) != 3 {
		h.Fatalf("every event = %v, %v", ids, err)
	}
	if ids, err := h.e.ListEventIDs(h.ctx, "k", 1, 1); err != nil || !slices.Equal(ids, []string{e1.ID}) {
		h.Fatalf("second event of k = %v, %v", ids, err)
	}
	page, err := h.e.PageEvents(h.ctx, "k", nil, 1)
	if err != nil || len(page) != 1 || page[0].ID != e2.ID || page[0].Score != e2.Now.UnixMilli() {
		h.Fatalf("first page = %+v, %v", page, err)
	}
	if page, err = h.e.PageEvents(h.ctx, "k", &page[0], 5); err != nil || len(page) != 1 || page[0].ID != e1.ID {
		h.Fatalf("second page = %+v, %v", page, err)
	}
	if n, err := h.e.IndexedEvents(h.ctx, "k"); err != nil || n != 2 {
		h.Fatalf("IndexedEvents(k) = %d, %v", n, err)
	}
	if n, err := h.e.IndexedEvents(h.ctx, ""); err != nil || n != 3 {
		h.Fatalf("IndexedEvents = %d, %v", n, err)
	}
}

func pushDebounce(h *h) {
	first := h.eventRun("d", "deb", engine.StrategyDebounce)
	if r := h.push(h.event("k", first)); r[0].Outcome != engine.EventRunCreated {
		h.Fatalf("first = %+v", r)
	}
	second := h.event("k", h.eventRun("d", "deb", engine.StrategyDebounce))
	second.Payload = []byte(`{"id":"2"}`)
	second.Tasks[0].Run.Input = second.Payload
	second.Now = h.now.Add(time.Second)
	second.Tasks[0].Run.Now = second.Now
	r := h.push(second)
	if r[0].Outcome != engine.EventRunDebounced || r[0].RunID != first.Run.RunID {
		h.Fatalf("second = %+v", r)
	}
	if in := h.run(first.Run.RunID).Input; !bytes.Equal(in, second.Payload) {
		h.Fatalf("waiting run's input = %s, want the later event's", in)
	}
	if _, dues, err := h.e.GetRuns(h.ctx, []string{first.Run.RunID}); err != nil || !ms(dues[0], second.Now.Add(time.Minute)) {
		h.Fatalf("due = %v, %v; want the window restarted", dues, err)
	}
}

func eventRetention(h *h) {
	old := h.event("k")
	old.Retention = time.Millisecond
	h.push(old)
	kept := h.event("k")
	h.push(kept)
	h.eventually("the event expires", func() bool {
		h.elapse(50 * time.Millisecond)
		_, err := h.e.GetEvent(h.ctx, old.ID)
		return errors.Is(err, engine.ErrEventNotFound)
	})
	removed := 0
	for part := range h.parts {
		r, _, err := h.e.SweepEvents(h.ctx, part, h.now.Add(time.Hour), 0, 100)
		if err != nil {
			h.Fatal(err)
		}
		removed += r
	}
	if removed != 1 {
		h.Fatalf("sweep removed %d events, want the expired one", removed)
	}
	if ids, err := h.e.ListEventIDs(h.ctx, "", 0, 10); err != nil || !slices.Equal(ids, []string{kept.ID}) {
		h.Fatalf("events = %v, %v; want %s", ids, err, kept.ID)
	}
}

// A fan-out stopped after the event was stored (its ingester died) stays
// pending, the push failing with a *FanoutPendingError; a recoverer past
// the grace finishes it, each task getting its run once.
func fanoutRecovery(h *h) {
	stop := errors.New("the ingester stops here")
	h.e.SetFanoutHooks(&engine.FanoutHooks{Steps: true, After: func(step engine.FanoutStep, _ string, _ int) error {
		if step == engine.FanoutStored {
			return stop
		}
		return nil
	}})
	a, b := h.eventRun("a", "ka", engine.StrategyStatus), h.eventRun("b", "", engine.StrategyNone)
	ev := h.event("k", a, b)
	_, err := h.e.PushEvent(h.ctx, ev)
	var pending *engine.FanoutPendingError
	if !errors.As(err, &pending) || !errors.Is(err, stop) || pending.EventID != ev.ID {
		h.Fatalf("stopped push: %v, want a *FanoutPendingError of %s", err, ev.ID)
	}
	if got, err := h.e.GetEvent(h.ctx, ev.ID); err != nil || got.PendingFanout == "" || len(got.Runs) != 0 {
		h.Fatalf("stored event = %+v, %v; want its fan-out pending", got, err)
	}
	h.e.SetFanoutHooks(nil)
	if taken, finished, err := h.e.RecoverFanouts(h.ctx, time.Now(), time.Hour, 10); err != nil || taken != 0 || finished != 0 {
		h.Fatalf("recovery within the grace = %d taken, %d finished, %v", taken, finished, err)
	}
	taken, finished, err := h.e.RecoverFanouts(h.ctx, time.Now().Add(2*engine.FanoutGrace), engine.FanoutGrace, 10)
	if err != nil || taken != 1 || finished != 1 {
		h.Fatalf("recovery = %d taken, %d finished, %v; want 1, 1", taken, finished, err)
	}
	got, err := h.e.GetEvent(h.ctx, ev.ID)
	if err != nil || got.PendingFanout != "" || len(got.Runs) != 2 || got.Runs[0].Outcome != engine.EventRunCreated ||
		got.Runs[1].Outcome != engine.EventRunCreated {
		h.Fatalf("recovered event = %+v, %v", got, err)
	}
	if n, err := h.e.IndexedRuns(h.ctx); err != nil || n != 2 {
		h.Fatalf("%d runs, %v; want one per task", n, err)
	}
	if taken, _, err := h.e.RecoverFanouts(h.ctx, time.Now().Add(2*engine.FanoutGrace), engine.FanoutGrace, 10); err != nil || taken != 0 {
		h.Fatalf("a second recovery took %d, %v", taken, err)
	}
}
