package worker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// testBatchers are the processor's batchers on st, as the wiring makes them.
func testBatchers(t *testing.T, st *fakeStore) (
	*engine.Batcher[engine.Delivery, engine.StartResult],
	*engine.Batcher[*engine.FinishParams, engine.FinishResult],
) {
	t.Helper()
	starts, err := engine.NewBatcher(engine.BatcherOptions{Senders: 1},
		func(ctx context.Context, ds []engine.Delivery) ([]engine.StartResult, []error) {
			return st.StartBatch(ctx, "w", time.Now(), ds)
		})
	if err != nil {
		t.Fatal(err)
	}
	finishes, err := engine.NewBatcher(engine.BatcherOptions{Senders: 1}, st.FinishBatch)
	if err != nil {
		t.Fatal(err)
	}
	return starts, finishes
}

// testWakes is the processor's batcher of parent wakes, over st.
func testWakes(t *testing.T, st processorStore) *engine.Batcher[string, struct{}] {
	t.Helper()
	wakes, err := engine.NewBatcher(engine.BatcherOptions{Senders: 1}, wakeParents(st))
	if err != nil {
		t.Fatal(err)
	}
	return wakes
}

// wakeStore records the runs each WakeRuns call wakes, and fails with err.
type wakeStore struct {
	*fakeStore
	err   error
	calls [][]string
}

func (s *wakeStore) WakeRuns(_ context.Context, ids []string) error {
	s.calls = append(s.calls, ids)
	return s.err
}

// The parents of children that end together are woken in one call, each
// once, and the call's error is each parent's.
func TestWakeParentsWakesEachParentOnceInOneCall(t *testing.T) {
	down := errors.New("redis down")
	st := &wakeStore{fakeStore: &fakeStore{}, err: down}
	_, errs := wakeParents(st)(context.Background(), []string{"a", "b", "a", "c", "b"})
	if len(st.calls) != 1 || !slices.Equal(st.calls[0], []string{"a", "b", "c"}) {
		t.Fatalf("WakeRuns calls = %v, want one of [a b c]", st.calls)
	}
	if len(errs) != 5 {
		t.Fatalf("%d errors for 5 wakes", len(errs))
	}
	for i, err := range errs {
		if !errors.Is(err, down) {
			t.Errorf("wake %d: %v, want the call's error", i, err)
		}
	}
}

func testProcessor(t *testing.T, st *fakeStore, concurrency int, h handlerFunc) *processor {
	t.Helper()
	def := task.Must[testIn, testIn]("t", task.Options{}).Definition()
	p := &processor{
		store: st, tasks: map[string]*registration{"t": {def: def, handler: h}}, active: newActiveRuns(),
		slots: newSlots(concurrency), consumer: "w", ns: "ns", lease: time.Minute, startDelay: -1,
		opTimeout: time.Second, concurrency: concurrency, clock: systemClock{}, log: discard,
	}
	p.starts, p.finishes = testBatchers(t, st)
	p.wakes = testWakes(t, st)
	return p.setUp()
}

// A dispatched delivery has its handler run and its outcome recorded,
// after which its slot is free again and it has left the active runs.
func TestProcessorRunsAndRecordsADelivery(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	recorded := make(chan *engine.FinishParams, 1)
	st.finishBatch = func(ps []*engine.FinishParams) ([]engine.FinishResult, []error) {
		for _, p := range ps {
			recorded <- p
		}
		return make([]engine.FinishResult, len(ps)), make([]error, len(ps))
	}
	p := testProcessor(t, st, 1, func(_ Context, in []byte) ([]byte, error) { return append([]byte("out:"), in...), nil })
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.slots.take(nil)
	p.dispatch([]engine.Delivery{{Task: "t", EntryID: "1-0", RunID: "r1", Spec: &engine.RunSpec{Input: []byte("x")}}})
	var f *engine.FinishParams
	select {
	case f = <-recorded:
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome recorded")
	}
	if f.RunID != "r1" || f.Attempt != 1 || f.Outcome != engine.OutcomeSucceeded || string(f.Payload) != "out:x" {
		t.Fatalf("recorded %+v", f)
	}
	within(t, "the slot to come back", func() { p.slots.take(nil) })
	within(t, "the run to leave the active runs once its outcome is recorded", func() {
		for p.active.get("r1") != nil {
			time.Sleep(time.Millisecond)
		}
	})
}

// A handler that returns hands its slot to the next delivery while its
// outcome is being recorded, and stays an active run (its lease renewed)
// until Redis holds the outcome. Once Concurrency outcomes wait, the next
// handler to return keeps its slot, so a worker whose outcomes cannot be
// written stops taking runs.
func TestProcessorHandsSlotsBackWhileOutcomesAreRecorded(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	unblock := make(chan struct{})
	st.finishBatch = func(ps []*engine.FinishParams) ([]engine.FinishResult, []error) {
		<-unblock
		res := make([]engine.FinishResult, len(ps))
		for i := range res {
			res[i].Written = true
		}
		return res, make([]error, len(ps))
	}
	const concurrency = 2
	handled := make(chan string, 8)
	p := testProcessor(t, st, concurrency, func(ctx Context, _ []byte) ([]byte, error) {
		handled <- ctx.RunID()
		return nil, nil
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	defer release() // before Stop, which waits for the outcomes
	delivery := func(id string) engine.Delivery {
		return engine.Delivery{Task: "t", EntryID: id + "-0", RunID: id, Spec: &engine.RunSpec{}}
	}
	run := func(ids ...string) {
		t.Helper()
		for range ids {
			if !p.slots.takeOne(nil) {
				t.Fatal("no slot")
			}
		}
		ds := make([]engine.Delivery, len(ids))
		for i, id := range ids {
			ds[i] = delivery(id)
		}
		p.dispatch(ds)
		for range ids {
			select {
			case <-handled:
			case <-time.After(5 * time.Second):
				t.Fatal("a handler did not run")
			}
		}
	}
	// Two runs: their handlers return, their outcomes are sent and held.
	run("r1", "r2")
	within(t, "both slots to come back while the outcomes wait", func() {
		for len(p.slots) != concurrency {
			time.Sleep(time.Millisecond)
		}
	})
	for _, id := range []string{"r1", "r2"} {
		if p.active.get(id) == nil {
			t.Fatalf("%s left the active runs before its outcome was recorded", id)
		}
	}
	// Two more: their handlers run on the slots handed back, but with
	// Concurrency outcomes waiting they keep their slots.
	run("r3", "r4")
	time.Sleep(50 * time.Millisecond)
	if n := len(p.slots); n != 0 {
		t.Fatalf("%d slots free with %d outcomes waiting and 2 more handlers returned, want 0", n, concurrency)
	}
	release()
	within(t, "every run to end and every slot to come back", func() {
		for len(p.slots) != concurrency || p.active.get("r1") != nil || p.active.get("r2") != nil ||
			p.active.get("r3") != nil || p.active.get("r4") != nil {
			time.Sleep(time.Millisecond)
		}
	})
	// And the recording tokens with them: two more runs go the same way.
	run("r5", "r6")
	within(t, "the slots to come back for the next runs", func() {
		for len(p.slots) != concurrency {
			time.Sleep(time.Millisecond)
		}
	})
}

// Stop cancels a running handler with ErrShutdown, gives its run back and
// returns only once the attempt has ended: its slot is free and the active
// runs are empty.
func TestProcessorStopGivesRunningRunsBack(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	running := make(chan struct{})
	causes := make(chan error, 1)
	p := testProcessor(t, st, 2, func(ctx Context, _ []byte) ([]byte, error) {
		close(running)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, context.Cause(ctx)
	})
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := p.slots.take(nil); n != 2 {
		t.Fatalf("took %d slots, want 2", n)
	}
	p.slots.release(1)
	p.dispatch([]engine.Delivery{{Task: "t", EntryID: "1-0", RunID: "r1", Spec: &engine.RunSpec{}}})
	<-running
	within(t, "Stop", p.Stop)
	if err := <-causes; !errors.Is(err, ErrShutdown) {
		t.Fatalf("handler's cause = %v, want ErrShutdown", err)
	}
	st.mu.Lock()
	requeued := st.requeued
	st.mu.Unlock()
	if len(requeued) != 1 || requeued[0] != "r1" {
		t.Fatalf("requeued %v, want [r1]", requeued)
	}
	if a := p.active.get("r1"); a != nil {
		t.Fatal("the run is still active after Stop")
	}
	if n := p.slots.take(nil); n != 2 {
		t.Fatalf("%d slots free after Stop, want 2", n)
	}
	within(t, "second Stop", p.Stop)
}
