package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/taskq/taskq/internal/engine"
)

// On Start the recoverer claims at once, and claims again without waiting
// for its period while it fills every slot it took: five lapsed runs with
// two slots are all taken over well before lease/2 (an hour here). Each
// claim asks for no more than the slots it holds, and the task streams
// take turns.
func TestRecovererClaimsWhileItFillsItsSlots(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	lapsed := map[string]int{"a": 3, "b": 2}
	var order []string
	st := &fakeStore{autoClaim: func(task string, count int) ([]engine.Delivery, error) {
		mu.Lock()
		defer mu.Unlock()
		if count > 2 {
			t.Errorf("claimed %d with 2 slots", count)
		}
		var ds []engine.Delivery
		for ; count > 0 && lapsed[task] > 0; count-- {
			lapsed[task]--
			order = append(order, task)
			ds = append(ds, engine.Delivery{Task: task, RunID: fmt.Sprintf("%s%d", task, lapsed[task]), Redelivered: true})
		}
		return ds, nil
	}}
	free := newSlots(2)
	d := &fakeDispatcher{slots: free, seen: make(chan int, 10)}
	m := newWorkerMetrics()
	r := &recoverer{store: st, slots: free, dispatch: d, consumer: "w", tasks: []string{"a", "b"},
		lease: 2 * time.Hour, opTimeout: time.Second, log: discard, metrics: m}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	deadline := time.After(5 * time.Second)
	for n := 0; n < 5; {
		select {
		case n = <-d.seen:
		case <-deadline:
			t.Fatalf("%d of 5 lapsed runs taken over", len(d.dispatched()))
		}
	}
	r.Stop()
	mu.Lock()
	defer mu.Unlock()
	if order[0] != "a" || order[2] != "b" {
		t.Fatalf("claimed from %v; want the streams to take turns", order)
	}
	if n := free.take(nil); n != 2 {
		t.Fatalf("%d slots free after the claims, want 2", n)
	}
	if a, b := counterValue(m.redeliveries.WithLabelValues("a")), counterValue(m.redeliveries.WithLabelValues("b")); a != 3 || b != 2 {
		t.Errorf("redeliveries counted a=%v b=%v, want 3 and 2", a, b)
	}
}

// Started before the fetcher, as the worker starts them, the recoverer
// claims before the fetcher's first read: lapsed runs are taken over
// before new ones are read.
func TestRecovererClaimsBeforeTheFirstRead(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	note := func(c string) {
		mu.Lock()
		calls = append(calls, c)
		mu.Unlock()
	}
	st := &fakeStore{
		autoClaim: func(string, int) ([]engine.Delivery, error) { note("claim"); return nil, nil },
		readGroup: func(ctx context.Context, _ int) ([]engine.Delivery, error) {
			note("read")
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	free := newSlots(2)
	d := &fakeDispatcher{slots: free}
	r := &recoverer{store: st, slots: free, dispatch: d, consumer: "w", tasks: []string{"a"},
		lease: time.Hour, opTimeout: time.Second, log: discard}
	f := &fetcher{store: st, restorer: &fakeRestorer{}, slots: free, dispatch: d, consumer: "w", tasks: []string{"a"},
		block: time.Second, opTimeout: time.Second, log: discard}
	for _, c := range []component{r, f} {
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	stopTogether(f, r)
	mu.Lock()
	defer mu.Unlock()
	if len(calls) < 2 || calls[0] != "claim" {
		t.Fatalf("calls %v; want the claim first", calls)
	}
	if n := free.takeFree(); n != 2 {
		t.Fatalf("%d slots free after Stop, want 2", n)
	}
}

// A recoverer stopped before its loop ran gives back the slots it took
// when it started.
func TestRecovererStoppedAtOnceGivesItsSlotsBack(t *testing.T) {
	t.Parallel()
	free := newSlots(3)
	for range 20 {
		r := &recoverer{store: &fakeStore{}, slots: free, dispatch: &fakeDispatcher{slots: free}, consumer: "w",
			tasks: []string{"a"}, lease: time.Hour, opTimeout: time.Second, log: discard}
		if err := r.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.Stop()
		if n := free.takeFree(); n != 3 {
			t.Fatalf("%d slots free after Stop, want 3", n)
		}
		free.release(3)
	}
}

// counterValue reads a counter's value.
func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
