package taskqtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// Defaults of the workers a Harness builds.
const (
	// FetchBlockDefault is how long a worker's read of the streams blocks:
	// short, so that stopping a worker at the end of a test is quick.
	FetchBlockDefault = 50 * time.Millisecond
	// ShutdownTimeoutDefault is how long stopping a worker lets running
	// handlers finish before cancelling them.
	ShutdownTimeoutDefault = 2 * time.Second
)

// CallTimeoutDefault bounds each read of Redis an assertion makes, and
// starting a worker.
const CallTimeoutDefault = 10 * time.Second

// Options configure a Harness. The zero value is ready to use.
type Options struct {
	// Namespace is the namespace the client and workers use (default
	// "default", the client's). Every harness has a Redis of its own, so
	// set it only when the code under test expects a particular one.
	Namespace string
	// Now is the time the harness's clock starts at (default: when the
	// harness is made, to the millisecond).
	Now time.Time
	// Logger receives the logs of the harness's client and workers
	// (default: discarded).
	Logger *slog.Logger
	// Worker, when set, changes the options of every worker the harness
	// makes (StartWorker, Work) after it has wired them to the harness:
	// schedules, concurrency, middleware, whatever the test needs.
	Worker func(*worker.Options)
}

// Harness is an in-process taskq for one test: an embedded Redis
// (miniredis), a client connected to it, and the workers the test starts,
// all telling the time by one clock that moves only with Advance. Everything
// is closed when the test ends (testing.TB.Cleanup), workers first.
//
// A Harness reports its own failures (a worker that cannot start, say) to
// the test that made it. Make it with New.
type Harness struct {
	t      testing.TB
	mini   *miniredis.Miniredis
	rdb    *redis.Client
	client *client.Client
	clock  *clock
	ns     string
	log    *slog.Logger
	change func(*worker.Options) // Options.Worker

	mu sync.Mutex
	// running lists the tasks handled by the workers of StartWorker, which Work
	// must not compete with.
	running []string
	workers atomic.Int64
}

// New starts a Harness, configured by opts when given (at most one; none
// means the zero Options).
func New(t testing.TB, opts ...Options) *Harness {
	t.Helper()
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("taskqtest: New takes at most one Options, got %d", len(opts))
	}
	return newHarness(t, o)
}

func newHarness(t testing.TB, opts Options) *Harness {
	t.Helper()
	if opts.Now.IsZero() {
		opts.Now = time.Now().Truncate(time.Millisecond)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	m, err := miniredis.Run()
	if err != nil {
		t.Fatalf("taskqtest: start the embedded Redis: %v", err)
	}
	t.Cleanup(m.Close)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	h := &Harness{t: t, mini: m, rdb: rdb, clock: &clock{now: opts.Now}, ns: opts.Namespace, log: opts.Logger, change: opts.Worker}
	c, err := client.New(h.ClientOptions())
	if err != nil {
		t.Fatalf("taskqtest: make the client: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	h.client = c
	return h
}

// Client is a client connected to the harness's Redis, telling the time by
// its clock. Hand it to the code under test that triggers runs.
func (h *Harness) Client() *client.Client { return h.client }

// Now is the current time of the harness's clock, which its client and
// workers tell the time by (ClientOptions().Clock).
func (h *Harness) Now() time.Time { return h.clock.Now() }

// ClientOptions are the options of a client wired to the harness: its
// Redis (a go-redis client of the embedded server, for code under test
// that builds its own taskq client, and for a test that reads a key or
// makes Redis fail with a go-redis hook), namespace, clock and logger,
// and SkipDurability, as the embedded Redis has no replicas to wait for.
// Change what the test needs and pass them to client.New; the harness
// does not close clients made this way.
func (h *Harness) ClientOptions() client.Options {
	return client.Options{Redis: h.rdb, Namespace: h.ns, Clock: h.clock, Logger: h.log, SkipDurability: true}
}

// workerOptions are the options of a worker wired to the harness: its
// Redis, namespace, clock and logger, a short FetchBlock and
// ShutdownTimeout, and a name of its own, then Options.Worker's changes.
func (h *Harness) workerOptions() worker.Options {
	o := worker.Options{
		Redis: h.rdb, Namespace: h.ns, Clock: h.clock, Logger: h.log,
		Name:       fmt.Sprintf("taskqtest-%d", h.workers.Add(1)),
		FetchBlock: FetchBlockDefault, ShutdownTimeout: ShutdownTimeoutDefault,
	}
	if h.change != nil {
		h.change(&o)
	}
	return o
}

// StartWorker makes a worker wired to the harness (its Redis, namespace,
// clock and logger, then Options.Worker's changes), lets register add the
// test's handlers to it (worker.Handle, or an application's own Register
// function), and starts it for the rest of the test. It returns once the
// worker is ready: its tasks are registered (so events reach them), it is
// reading their streams and it hears cancels. It stops the worker
// gracefully when the test ends, before the harness's Redis goes away. A
// run triggered from now on is worked in the background: wait for it with
// the client (RunRef.Result) or look at it with the Require functions.
func (h *Harness) StartWorker(register func(w *worker.Worker) error) *worker.Worker {
	h.t.Helper()
	w, err := worker.New(h.workerOptions())
	if err != nil {
		h.t.Fatalf("taskqtest: make a worker: %v", err)
	}
	if err := register(w); err != nil {
		h.t.Fatalf("taskqtest: register handlers: %v", err)
	}
	h.start(w)
	return w
}

// start starts w and stops it when the test ends (see StartWorker).
func (h *Harness) start(w *worker.Worker) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeoutDefault)
	defer cancel()
	if err := w.Start(ctx); err != nil {
		h.t.Fatalf("taskqtest: start worker %s: %v", w.Name(), err)
	}
	// The tasks it handles are those it registered as it started.
	regs, err := h.client.Inspector().ListTasks(ctx)
	if err != nil {
		h.t.Fatalf("taskqtest: list the tasks of worker %s: %v", w.Name(), err)
	}
	h.mu.Lock()
	for _, r := range regs {
		if r.Worker == w.Name() {
			h.running = append(h.running, r.Spec.Name)
		}
	}
	h.mu.Unlock()
	h.t.Cleanup(func() {
		if err := w.Shutdown(context.Background()); err != nil {
			h.t.Errorf("taskqtest: stop worker %s: %v", w.Name(), err)
		}
	})
}

// handledByWorker reports whether a worker of StartWorker handles the task.
func (h *Harness) handledByWorker(task string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Contains(h.running, task)
}

// Advance moves the harness's time forward by d: its clock, and the expiry
// of every key in its Redis (miniredis FastForward), together. Idempotency
// keys whose TTL or retain window ends within d are released, run records
// past their retention expire, and retries and debounced runs that fall due
// are queued by the next pass of a running worker (or by Work).
//
// Nothing else moves: time stands still in a harness between calls of
// Advance, so a run's retry waits for its backoff to be advanced past
// however long the test takes. Leases are the exception, measured by Redis
// in real time, so a handler running while the test advances keeps its run.
// d must not be negative.
func (h *Harness) Advance(d time.Duration) {
	h.t.Helper()
	if d < 0 {
		h.t.Fatalf("taskqtest: Advance(%s): time only moves forward", d)
	}
	h.clock.add(d)
	h.mini.FastForward(d)
}
