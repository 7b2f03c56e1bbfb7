package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redisstore"
)

// On Start the recoverer claims at once, and claims again without waiting
// for its period while it fills every slot it took: five lapsed runs with
// two slots are all taken over well before lease/2 (an hour here). Each
// claim asks for no more than the slots it holds, and the task streams
// take turns.
func TestRecovererClaimsWhileItFillsItsSlots(t *testing.T) {
	var mu sync.Mutex
	lapsed := map[string]int{"a": 3, "b": 2}
	var order []string
	st := &fakeStore{autoClaim: func(task string, count int) ([]redisstore.Delivery, error) {
		mu.Lock()
		defer mu.Unlock()
		if count > 2 {
			t.Errorf("claimed %d with 2 slots", count)
		}
		var ds []redisstore.Delivery
		for ; count > 0 && lapsed[task] > 0; count-- {
			lapsed[task]--
			order = append(order, task)
			ds = append(ds, redisstore.Delivery{Task: task, RunID: fmt.Sprintf("%s%d", task, lapsed[task]), Redelivered: true})
		}
		return ds, nil
	}}
	free := newSlots(2)
	d := &fakeDispatcher{slots: free, seen: make(chan int, 10)}
	r := &recoverer{store: st, slots: free, dispatch: d, consumer: "w", tasks: []string{"a", "b"},
		lease: 2 * time.Hour, opTimeout: time.Second, log: discard}
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
}
