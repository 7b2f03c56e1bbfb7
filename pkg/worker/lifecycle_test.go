package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/runstats"
)

// testLifecycle is a lifecycle of the components testComponents builds.
func testLifecycle(t *testing.T, st *fakeStore, sub subscriber) *lifecycle {
	cs := testComponents(t, st, sub)
	return &lifecycle{
		registrar: cs[0].c.(*registrar), presence: cs[1].c.(*presence), canceller: cs[2].c.(*canceller),
		processor: cs[3].c.(*processor), heartbeater: cs[4].c.(*heartbeater), forwarder: cs[5].c.(*forwarder),
		janitor: cs[6].c.(*janitor), scheduler: &idle{}, recoverer: cs[7].c.(*recoverer), fetcher: cs[8].c.(*fetcher),
		stats: &statsRecorder{rec: runstats.New(st, nil), interval: time.Second, opTimeout: time.Second},
	}
}

// A Start that fails half-way (the canceller cannot subscribe) returns the
// error and stops what it had started: the registrar's loop has ended,
// and the components after the canceller never start.
func TestLifecycleStartFailureStopsWhatStarted(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	b.Mini.Close()
	st := &fakeStore{}
	l := testLifecycle(t, st, connect.Engine(b.Client, b.Namespace))
	l.canceller.opTimeout = 200 * time.Millisecond
	if err := l.start(context.Background()); err == nil {
		t.Fatal("start succeeded with Redis gone")
	}
	select {
	case <-l.registrar.done:
	default:
		t.Fatal("the registrar's loop still runs after a failed start")
	}
	if err := l.fetcher.Start(context.Background()); !errors.Is(err, errStopped) {
		t.Fatalf("fetcher Start after the failed start = %v, want errStopped", err)
	}
	calls := st.calls.Load()
	time.Sleep(50 * time.Millisecond)
	if st.calls.Load() != calls {
		t.Fatal("components still call the store after a failed start")
	}
}

// A Stop that comes before Start (a Shutdown racing Start) makes start
// fail with the error Worker.Start reports for it.
func TestLifecycleStoppedBeforeStart(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	l := testLifecycle(t, &fakeStore{}, connect.Engine(b.Client, b.Namespace))
	within(t, "stop", func() { l.stop(context.Background(), time.Second) })
	if err := l.start(context.Background()); err == nil || err.Error() != "worker: shut down before it started" {
		t.Fatalf("start after stop = %v", err)
	}
}

// stop gives running handlers their grace: one that returns within it
// has its outcome recorded rather than its run given back, and the
// heartbeater is still running while it drains.
func TestLifecycleStopDrainsBeforeHeartbeatsStop(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	var beats atomic.Int64
	st := &fakeStore{heartbeat: func(_ string, leases []engine.Lease) ([]engine.LeaseReport, error) {
		beats.Add(1)
		out := make([]engine.LeaseReport, len(leases))
		for i := range out {
			out[i].State = engine.LeaseHeld
		}
		return out, nil
	}}
	l := testLifecycle(t, st, connect.Engine(b.Client, b.Namespace))
	release := make(chan struct{})
	running := make(chan struct{})
	l.processor.tasks["t"].handler = func(Context, []byte) ([]byte, error) {
		close(running)
		<-release
		return nil, nil
	}
	if err := l.start(context.Background()); err != nil {
		t.Fatal(err)
	}
	l.processor.slots.takeOne(nil) // the delivery's slot, as the fetcher takes it
	l.processor.dispatch([]engine.Delivery{{Task: "t", EntryID: "1-0", RunID: "r1"}})
	<-running
	stopped := make(chan struct{})
	go func() { l.stop(context.Background(), 5*time.Second); close(stopped) }()
	time.Sleep(30 * time.Millisecond)
	select {
	case <-l.heartbeater.done:
		t.Fatal("the heartbeater stopped while a handler was still running")
	default:
	}
	before := beats.Load()
	time.Sleep(30 * time.Millisecond)
	if beats.Load() == before {
		t.Fatal("no heartbeat while the handler drained")
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("stop did not return once the handler had returned")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.requeued) != 0 {
		t.Fatalf("runs given back: %v; the handler returned within its grace", st.requeued)
	}
}
