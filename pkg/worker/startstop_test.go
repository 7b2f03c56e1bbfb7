package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/task"
)

type testIn struct{ ID string }

// testComponents builds every component of a worker on st (and sub for the
// canceller), with short intervals, in start order.
func testComponents(t *testing.T, st *fakeStore, sub subscriber) []struct {
	name string
	c    component
} {
	t.Helper()
	def := task.Must[testIn, testIn]("t", task.Options{}).Definition()
	tasks := map[string]*registration{"t": {def: def, handler: func(Context, []byte) ([]byte, error) { return nil, nil }}}
	active := newActiveRuns()
	free := newSlots(2)
	clock := systemClock{}
	p := &processor{
		store: st, tasks: tasks, active: active, slots: free, consumer: "w", ns: "ns",
		lease: time.Second, startDelay: -1, opTimeout: time.Second, concurrency: 2, clock: clock, log: discard,
	}
	p.starts, p.finishes = testBatchers(t, st)
	p.wakes = testWakes(t, st)
	reg := &registrar{store: st, defs: []*task.Definition{def}, consumer: "w", interval: 10 * time.Millisecond,
		opTimeout: time.Second, clock: clock, log: discard}
	return []struct {
		name string
		c    component
	}{
		{"registrar", reg},
		{"presence", &presence{store: st, opTimeout: time.Second, clock: clock, log: discard,
			record: engine.WorkerRecord{Name: "w", HeartbeatInterval: 10 * time.Millisecond}}},
		{"canceller", &canceller{sub: sub, channels: []string{"cancels"}, active: active, opTimeout: time.Second, log: discard}},
		{"processor", p.setUp()},
		{"heartbeater", &heartbeater{store: st, active: active, consumer: "w", lease: time.Second,
			interval: 10 * time.Millisecond, clock: clock, log: discard}},
		{"forwarder", &forwarder{store: st, opTimeout: time.Second, clock: clock, log: discard}},
		{"janitor", &janitor{store: st, every: 10 * time.Millisecond, opTimeout: time.Second, clock: clock, log: discard}},
		{"recoverer", &recoverer{store: st, slots: free, dispatch: p, consumer: "w", tasks: []string{"t"},
			lease: 20 * time.Millisecond, opTimeout: time.Second, log: discard}},
		{"fetcher", &fetcher{store: st, restorer: reg, slots: free, dispatch: p, consumer: "w", tasks: []string{"t"},
			block: 10 * time.Millisecond, opTimeout: time.Second, log: discard}},
	}
}

// within fails the test if fn does not return within 5s (a Stop that
// hangs).
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not return within 5s", what)
	}
}

// Every component shares one start/stop shape: Stop before Start makes a
// later Start fail with errStopped and touch nothing; Start twice fails
// with errStarted; Stop twice returns both times; and once Stop has
// returned the component makes no call to Redis, nor has one in flight.
func TestEveryComponentSharesTheStartStopShape(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	ctx := context.Background()
	t.Run("stop before start", func(t *testing.T) {
		st := &fakeStore{}
		for _, tc := range testComponents(t, st, connect.Engine(b.Client, b.Namespace)) {
			within(t, tc.name+" Stop before Start", func() { tc.c.Stop(); tc.c.Stop() })
			if err := tc.c.Start(ctx); !errors.Is(err, errStopped) {
				t.Errorf("%s: Start after Stop = %v, want errStopped", tc.name, err)
			}
		}
		if n := st.calls.Load(); n != 0 {
			t.Fatalf("components stopped before they started made %d calls to the store", n)
		}
	})
	t.Run("start twice, stop twice", func(t *testing.T) {
		st := &fakeStore{}
		cs := testComponents(t, st, connect.Engine(b.Client, b.Namespace))
		for _, tc := range cs {
			if err := tc.c.Start(ctx); err != nil {
				t.Fatalf("%s: Start: %v", tc.name, err)
			}
			if err := tc.c.Start(ctx); !errors.Is(err, errStarted) {
				t.Errorf("%s: second Start = %v, want errStarted", tc.name, err)
			}
		}
		time.Sleep(50 * time.Millisecond) // every loop has made calls by now
		if st.calls.Load() == 0 {
			t.Fatal("the started components made no call to the store")
		}
		for i := len(cs) - 1; i >= 0; i-- {
			within(t, cs[i].name+" Stop", cs[i].c.Stop)
			within(t, cs[i].name+" second Stop", cs[i].c.Stop)
		}
		if n := st.inFlight.Load(); n != 0 {
			t.Fatalf("%d calls to the store still in flight after every Stop returned", n)
		}
		before := st.calls.Load()
		time.Sleep(50 * time.Millisecond)
		if after := st.calls.Load(); after != before {
			t.Fatalf("stopped components made %d calls to the store", after-before)
		}
	})
}

// A second Stop made while the first still waits for the loop returns no
// sooner than the first: both return once the loop has ended.
func TestConcurrentStopsBothWaitForTheLoop(t *testing.T) {
	t.Parallel()
	var s startStop
	release := make(chan struct{})
	ended := make(chan struct{})
	if err := s.begin(func(quit <-chan struct{}) {
		<-quit
		<-release
		close(ended)
	}); err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{}, 2)
	for range 2 {
		go func() { s.Stop(); returned <- struct{}{} }()
	}
	select {
	case <-returned:
		t.Fatal("a Stop returned while the loop was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	for range 2 {
		select {
		case <-returned:
		case <-time.After(5 * time.Second):
			t.Fatal("Stop did not return once the loop ended")
		}
	}
	select {
	case <-ended:
	default:
		t.Fatal("Stop returned before the loop ended")
	}
}
