package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/task"
)

// testBatchers are the processor's batchers on st, as the wiring makes them.
func testBatchers(t *testing.T, st *fakeStore) (
	*redisstore.Batcher[redisstore.Delivery, redisstore.StartResult],
	*redisstore.Batcher[*redisstore.FinishParams, redisstore.FinishResult],
) {
	t.Helper()
	starts, err := redisstore.NewBatcher(redisstore.BatcherOptions{Senders: 1},
		func(ctx context.Context, ds []redisstore.Delivery) ([]redisstore.StartResult, []error) {
			return st.StartBatch(ctx, "w", time.Now(), ds)
		})
	if err != nil {
		t.Fatal(err)
	}
	finishes, err := redisstore.NewBatcher(redisstore.BatcherOptions{Senders: 1}, st.FinishBatch)
	if err != nil {
		t.Fatal(err)
	}
	return starts, finishes
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
	return p.setUp()
}

// A dispatched delivery has its handler run and its outcome recorded,
// after which its slot is free again and it has left the active runs.
func TestProcessorRunsAndRecordsADelivery(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	recorded := make(chan *redisstore.FinishParams, 1)
	st.finishBatch = func(ps []*redisstore.FinishParams) ([]redisstore.FinishResult, []error) {
		for _, p := range ps {
			recorded <- p
		}
		return make([]redisstore.FinishResult, len(ps)), make([]error, len(ps))
	}
	p := testProcessor(t, st, 1, func(_ Context, in []byte) ([]byte, error) { return append([]byte("out:"), in...), nil })
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	p.slots.take(nil)
	p.dispatch([]redisstore.Delivery{{Task: "t", EntryID: "1-0", RunID: "r1", Spec: &redisstore.RunSpec{Input: []byte("x")}}})
	var f *redisstore.FinishParams
	select {
	case f = <-recorded:
	case <-time.After(5 * time.Second):
		t.Fatal("no outcome recorded")
	}
	if f.RunID != "r1" || f.Attempt != 1 || f.Outcome != redisstore.OutcomeSucceeded || string(f.Payload) != "out:x" {
		t.Fatalf("recorded %+v", f)
	}
	within(t, "the slot to come back", func() { p.slots.take(nil) })
	if a := p.active.get("r1"); a != nil {
		t.Fatal("the run is still active after its outcome was recorded")
	}
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
	p.dispatch([]redisstore.Delivery{{Task: "t", EntryID: "1-0", RunID: "r1", Spec: &redisstore.RunSpec{}}})
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
