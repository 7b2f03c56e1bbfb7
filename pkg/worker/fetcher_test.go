package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// A read that fails with NOGROUP (Redis lost its data) has the registrar
// restore the groups and registrations, and the fetcher reads on; a read
// never asks for more deliveries than there are free slots.
func TestFetcherRestoresOnNoGroupAndReadsOn(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	st := &fakeStore{readGroup: func(ctx context.Context, count int) ([]engine.Delivery, error) {
		if count > 3 {
			t.Errorf("read %d with 3 slots", count)
		}
		switch reads.Add(1) {
		case 1:
			return nil, errors.New("NOGROUP No such key or consumer group")
		case 2:
			return []engine.Delivery{{Task: "t", RunID: "r1"}, {Task: "t", RunID: "r2"}}, nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	free := newSlots(3)
	d := &fakeDispatcher{slots: free, seen: make(chan int, 10)}
	rs := &fakeRestorer{}
	f := &fetcher{store: st, restorer: rs, slots: free, dispatch: d, consumer: "w", tasks: []string{"t"},
		block: time.Second, opTimeout: time.Second, log: discard}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	select {
	case <-d.seen:
	case <-time.After(5 * time.Second):
		t.Fatal("nothing dispatched after the groups were restored")
	}
	if n := rs.calls.Load(); n != 1 {
		t.Fatalf("restored %d times, want 1", n)
	}
	within(t, "Stop during a blocked read", f.Stop)
	if n := free.take(nil); n != 3 {
		t.Fatalf("%d slots free after Stop, want 3", n)
	}
}

// A read of several streams that brings more deliveries than free slots
// dispatches the surplus only as slots free up.
func TestFetcherHoldsTheSurplusUntilSlotsFree(t *testing.T) {
	t.Parallel()
	var reads atomic.Int64
	st := &fakeStore{readGroup: func(ctx context.Context, _ int) ([]engine.Delivery, error) {
		if reads.Add(1) == 1 {
			return []engine.Delivery{{RunID: "1"}, {RunID: "2"}, {RunID: "3"}}, nil
		}
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	free := newSlots(2)
	held := make(chan []engine.Delivery, 3)
	f := &fetcher{store: st, restorer: &fakeRestorer{}, slots: free, dispatch: dispatchFunc(func(ds []engine.Delivery) { held <- ds }),
		consumer: "w", tasks: []string{"a", "b"}, block: time.Second, opTimeout: time.Second, log: discard}
	if err := f.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if ds := <-held; len(ds) != 2 {
		t.Fatalf("first dispatch of %d deliveries with 2 slots", len(ds))
	}
	select {
	case ds := <-held:
		t.Fatalf("%v dispatched with no slot free", ds)
	case <-time.After(50 * time.Millisecond):
	}
	free.release(1)
	select {
	case ds := <-held:
		if len(ds) != 1 || ds[0].RunID != "3" {
			t.Fatalf("then dispatched %v, want run 3", ds)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the surplus was not dispatched once a slot freed")
	}
}

type dispatchFunc func([]engine.Delivery)

func (f dispatchFunc) dispatch(ds []engine.Delivery) { f(ds) }
