package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type in struct {
	ID   string `json:"id"`
	Mode string `json:"mode,omitempty"`
}

type out struct {
	ID     string `json:"id"`
	StepID string `json:"stepId"`
	By     string `json:"by,omitempty"`
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newClient(t *testing.T, b *redistest.Backend) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startWorker starts a worker with short leases; register adds handlers.
func startWorker(t *testing.T, b *redistest.Backend, opts worker.Options, register func(w *worker.Worker)) *worker.Worker {
	t.Helper()
	opts.Redis, opts.Namespace = b.Client, b.Namespace
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 2 * time.Second
	}
	if opts.ShutdownTimeout == 0 {
		// A quarter of it is kept for giving runs back (see Shutdown).
		opts.ShutdownTimeout = time.Second
	}
	if opts.FetchBlock == 0 {
		opts.FetchBlock = 200 * time.Millisecond
	}
	w, err := worker.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	register(w)
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Shutdown(context.Background()) })
	return w
}

func wait(t *testing.T, ref *client.RunRef[out]) *client.RunInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := ref.Wait(ctx)
	if err != nil {
		t.Fatalf("waiting for run %s: %v", ref.ID(), err)
	}
	return info
}

// runStatus reads the status of the run h (a *client.RunHandle or a
// *client.RunRef) refers to.
func runStatus(ctx context.Context, h interface {
	Get(context.Context) (*client.RunInfo, error)
}) (client.Status, error) {
	info, err := h.Get(ctx)
	if err != nil {
		return "", err
	}
	return info.Status, nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

// Status strategy: duplicates collide while the run is active, and the key
// is free at once after success, after the last retry fails (held through
// the retries), and after cancellation.
func TestStatusTimeline(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("status-timeline", task.Options{
			Idempotency: task.Status(`"job:" + input.id`, time.Minute),
			Retries:     2,
			Backoff:     task.Backoff{Initial: 100 * time.Millisecond, Factor: 1},
		})
		release := make(chan struct{})
		var attempts atomic.Int32
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				attempts.Add(1)
				switch x.Mode {
				case "block":
					select {
					case <-release:
					case <-ctx.Done():
						return out{}, context.Cause(ctx)
					}
				case "fail":
					return out{}, errors.New("always fails")
				case "hold":
					<-ctx.Done()
					return out{}, context.Cause(ctx)
				}
				return out{ID: x.ID}, nil
			})
		})
		expectCollision := func(owner string) {
			t.Helper()
			_, err := client.RunNoWait(ctx, c, tk, in{ID: "1", Mode: "block"})
			var coll *client.IdempotencyCollisionError
			if !errors.As(err, &coll) || coll.ExistingRunID != owner {
				t.Fatalf("duplicate: %v, want collision with %s", err, owner)
			}
		}

		// Success.
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "1", Mode: "block"})
		if err != nil {
			t.Fatal(err)
		}
		expectCollision(ref.ID()) // queued
		eventually(t, "run to start", func() bool { s, _ := runStatus(ctx, ref); return s == client.StatusRunning })
		expectCollision(ref.ID()) // running
		close(release)
		if info := wait(t, ref); info.Status != client.StatusSucceeded {
			t.Fatalf("status = %s", info.Status)
		}

		// Failure after the last retry: the key is held through every retry.
		failing, err := client.RunNoWait(ctx, c, tk, in{ID: "1", Mode: "fail"})
		if err != nil {
			t.Fatalf("trigger after success: %v", err)
		}
		eventually(t, "a retry", func() bool { i, _ := failing.Get(ctx); return i.Attempt >= 2 && !i.Status.Terminal() })
		expectCollision(failing.ID())
		info := wait(t, failing)
		if info.Status != client.StatusFailed || info.Attempt != 3 {
			t.Fatalf("failing run = %s after %d attempts, want failed after 3", info.Status, info.Attempt)
		}
		if _, err := failing.Result(ctx); !errors.Is(err, client.ErrRunFailed) {
			t.Fatalf("result of failed run: %v", err)
		}

		// Cancellation of a running run.
		held, err := client.RunNoWait(ctx, c, tk, in{ID: "1", Mode: "hold"})
		if err != nil {
			t.Fatalf("trigger after failure: %v", err)
		}
		eventually(t, "held run to start", func() bool { s, _ := runStatus(ctx, held); return s == client.StatusRunning })
		expectCollision(held.ID())
		if _, err := held.Cancel(ctx); err != nil {
			t.Fatal(err)
		}
		again, err := client.RunNoWait(ctx, c, tk, in{ID: "1"})
		if err != nil {
			t.Fatalf("trigger right after cancel: %v", err)
		}
		if info := wait(t, again); info.Status != client.StatusSucceeded {
			t.Fatalf("run after cancel = %s", info.Status)
		}
	})
}

// A run that never finishes loses its key after fallback_ttl; a second run
// claims it; when the first finally finishes, it does not free the second
// run's key. The second run is of a task with a long fallback ttl (keys
// are namespace-wide across tasks), so that its key cannot lapse too
// before it is looked at, however slow the machine.
func TestFallbackTTL(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("fallback", task.Options{Idempotency: task.Status(`input.id`, 300*time.Millisecond)})
		later := task.Must[in, out]("fallback-later", task.Options{Idempotency: task.Status(`input.id`, time.Hour)})
		release := map[string]chan struct{}{"slow": make(chan struct{}), "second": make(chan struct{})}
		handle := func(ctx worker.Context, x in) (out, error) {
			<-release[x.Mode]
			return out{ID: x.ID}, nil
		}
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, handle)
			worker.Handle(w, later, handle)
		})
		// Runs before the worker's shutdown (cleanups run last first), so
		// that a failed check does not leave a handler blocked.
		t.Cleanup(func() {
			for _, ch := range release {
				select {
				case <-ch:
				default:
					close(ch)
				}
			}
		})
		first, err := client.RunNoWait(ctx, c, tk, in{ID: "k", Mode: "slow"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.RunNoWait(ctx, c, later, in{ID: "k", Mode: "second"}); !errors.Is(err, client.ErrIdempotencyCollision) {
			t.Fatalf("duplicate inside fallback ttl: %v", err)
		}
		time.Sleep(400 * time.Millisecond)
		second, err := client.RunNoWait(ctx, c, later, in{ID: "k", Mode: "second"})
		if err != nil {
			t.Fatalf("trigger after fallback ttl: %v", err)
		}
		close(release["slow"])
		if info := wait(t, first); info.Status != client.StatusSucceeded {
			t.Fatalf("first run = %s", info.Status)
		}
		ks, ok, _ := clientlink.Store(c).GetKey(ctx, "k")
		if !ok || ks.Owner != second.ID() {
			t.Fatalf("key after the first run ended = %+v (held %v), want still owned by %s", ks, ok, second.ID())
		}
		close(release["second"])
		wait(t, second)
		if _, ok, _ := clientlink.Store(c).GetKey(ctx, "k"); ok {
			t.Fatal("second run did not release its key")
		}
	})
}

// The collision path users write: trigger, collide, fetch the existing run's
// result; both callers see the same result.
func TestCollisionGivesOwnersResult(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("collide", task.Options{Idempotency: task.TTL(`input.id`, time.Minute)})
		gate := make(chan struct{})
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				<-gate
				return out{ID: x.ID, StepID: ctx.StepID(), By: ctx.RunID()}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "o-1"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = client.RunNoWait(ctx, c, tk, in{ID: "o-1"})
		var coll *client.IdempotencyCollisionError
		if !errors.As(err, &coll) {
			t.Fatalf("duplicate: %v", err)
		}
		close(gate)
		mine, err := ref.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := client.Ref[out](c, coll.ExistingRunID).Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if mine != theirs || mine.By != ref.ID() {
			t.Fatalf("owner's result %+v differs from the caller's %+v", theirs, mine)
		}
		raw, err := client.Ref[json.RawMessage](c, coll.Owner.ID()).Result(ctx)
		if err != nil || len(raw) == 0 {
			t.Fatalf("result through the collision's handle: %s, %v", raw, err)
		}
	})
}

func TestRetriesKeepStepIDAndTimeoutCancelsContext(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		flaky := task.Must[in, out]("flaky", task.Options{Retries: 3, Backoff: task.Backoff{Initial: 20 * time.Millisecond, Factor: 1}})
		slow := task.Must[in, out]("slow", task.Options{Timeout: 100 * time.Millisecond})
		var mu sync.Mutex
		steps := map[int]string{}
		var causes = make(chan error, 1)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, flaky, func(ctx worker.Context, x in) (out, error) {
				mu.Lock()
				steps[ctx.Attempt()] = ctx.StepID()
				mu.Unlock()
				if ctx.Attempt() < 3 {
					return out{}, fmt.Errorf("attempt %d fails", ctx.Attempt())
				}
				return out{StepID: ctx.StepID()}, nil
			})
			worker.Handle(w, slow, func(ctx worker.Context, x in) (out, error) {
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return out{}, ctx.Err()
			})
		})
		res, err := client.Run(ctx, c, flaky, in{ID: "x"})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(steps) != 3 || steps[1] != steps[2] || steps[2] != steps[3] || res.StepID != steps[1] {
			t.Fatalf("step IDs per attempt = %v, result %q; want one ID on all 3 attempts", steps, res.StepID)
		}
		mu.Unlock()

		_, err = client.Run(ctx, c, slow, in{ID: "y"})
		var rf *client.RunError
		if !errors.As(err, &rf) || !errors.Is(<-causes, worker.ErrTimeout) {
			t.Fatalf("timed out run: %v", err)
		}
	})
}

func TestCancelRunningRunCancelsHandlerContext(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("cancel-running", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		started := make(chan string, 1)
		causes := make(chan error, 1)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				started <- ctx.RunID()
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return out{}, ctx.Err()
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "c"})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		if st, err := ref.Cancel(ctx); err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel: %v %v", st, err)
		}
		select {
		case cause := <-causes:
			if !errors.Is(cause, task.ErrRunCancelled) {
				t.Fatalf("handler context cause = %v", cause)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("handler context not cancelled")
		}
		if info := wait(t, ref); info.Status != client.StatusCancelled {
			t.Fatalf("status = %s", info.Status)
		}
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: "c"}); err != nil {
			t.Fatalf("key not released by cancel: %v", err)
		}
	})
}

func TestShutdownGivesUnfinishedRunsBack(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("shutdown", task.Options{})
		started := make(chan struct{}, 1)
		w1 := startWorker(t, b, worker.Options{ShutdownTimeout: time.Second, LeaseDuration: time.Minute}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				started <- struct{}{}
				<-ctx.Done()
				return out{}, ctx.Err()
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		<-started
		if err := w1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if st, _ := runStatus(ctx, ref); st != client.StatusQueued {
			t.Fatalf("status after shutdown = %s, want queued", st)
		}
		// A new worker picks it up at once, without waiting for the minute-long lease.
		startWorker(t, b, worker.Options{LeaseDuration: time.Minute}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
		})
		if info := wait(t, ref); info.Status != client.StatusSucceeded || info.Attempt != 2 {
			t.Fatalf("run after handover = %s attempt %d", info.Status, info.Attempt)
		}
	})
}

func TestWorkersRegisterDefinitionsAndReportConflicts(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		v1 := task.Must[in, out]("registered", task.Options{Idempotency: task.TTL(`input.id`, time.Minute), OnEvents: []string{"order.created"}})
		v2 := task.Must[in, out]("registered", task.Options{Idempotency: task.TTL(`"v2:" + input.id`, time.Minute)})
		noop := func(ctx worker.Context, x in) (out, error) { return out{}, nil }
		startWorker(t, b, worker.Options{Name: "w1"}, func(w *worker.Worker) { worker.Handle(w, v1, noop) })

		reg, err := c.Inspector().GetTask(ctx, "registered")
		if err != nil || reg.Spec.Expression != "input.id" || reg.Worker != "w1" || reg.Spec.OnEvents[0] != "order.created" {
			t.Fatalf("registration = %+v, %v", reg, err)
		}
		def, err := c.Definition(ctx, "registered")
		if err != nil {
			t.Fatal(err)
		}
		if key, _ := def.Key([]byte(`{"id":"9"}`), nil); key != "9" {
			t.Fatalf("registered definition derives %q", key)
		}

		// A worker that refuses conflicts fails to start and changes nothing.
		w2, _ := worker.New(worker.Options{Redis: b.Client, Namespace: b.Namespace, Name: "w2", Logger: quiet, RefuseDefinitionConflict: true})
		worker.Handle(w2, v2, noop)
		err = w2.Start(ctx)
		var conflict *worker.DefinitionConflictError
		if !errors.As(err, &conflict) || conflict.RegisteredBy != "w1" {
			t.Fatalf("conflicting start: %v", err)
		}
		if reg, _ := c.Inspector().GetTask(ctx, "registered"); reg.Worker != "w1" {
			t.Fatal("a refused registration replaced the definition")
		}
		// The default replaces it (with a warning in the log).
		startWorker(t, b, worker.Options{Name: "w3"}, func(w *worker.Worker) { worker.Handle(w, v2, noop) })
		if reg, _ := c.Inspector().GetTask(ctx, "registered"); reg.Worker != "w3" || reg.Spec.Expression != `"v2:" + input.id` {
			t.Fatalf("registration after replace = %+v", reg)
		}
		if _, err := c.Definition(ctx, "nope"); !errors.Is(err, client.ErrTaskNotFound) {
			t.Fatalf("unknown task: %v", err)
		}
	})
}

// Finished runs leave nothing behind once their retention ends: the
// record, its stream entry, its released key and its index entry.
func TestRetentionBoundsWhatRunsLeaveBehind(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, Retention: time.Second, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tk := task.Must[in, out]("retention", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		w := startWorker(t, b, worker.Options{SweepInterval: 200 * time.Millisecond}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
		})
		for i := 0; i < 20; i++ {
			ref, err := client.RunNoWait(ctx, c, tk, in{ID: fmt.Sprint(i)})
			if err != nil {
				t.Fatal(err)
			}
			wait(t, ref)
		}
		parts, err := redispeek.Store(clientlink.Store(c)).Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		k := parts.Keys(0)
		// What stays: the streams (one per partition and priority), the
		// task registry, the namespace's meta record, the running
		// worker's presence record and its index, and the run statistics'
		// counters (per minute and per ten minutes, not per run: the
		// worker adds its counts every StatsInterval, and they expire
		// with the charts' window).
		stays := map[string]bool{k.Tasks(): true, k.Worker(w.Name()): true, k.Workers(): true, k.Meta(): true}
		var statsPrefixes []string
		for i := range parts.Count() {
			for p := 1; p <= 3; p++ {
				stays[parts.Keys(i).Lane("retention", p)] = true
			}
			statsPrefixes = append(statsPrefixes, parts.Keys(i).Prefix()+"stats:")
		}
		counters := func(key string) bool {
			return slices.ContainsFunc(statsPrefixes, func(p string) bool { return strings.HasPrefix(key, p) })
		}
		// What is left, or "" once only what stays is: the sweeper works
		// through every partition each SweepInterval, slower on a loaded
		// machine, so the wait is long and a failure names what was left.
		left := func() string {
			keys, err := redistest.NamespaceKeys(ctx, b.Client, b.Namespace)
			if err != nil {
				return err.Error()
			}
			for _, key := range keys {
				if !stays[key] && !counters(key) {
					return "key " + key
				}
			}
			for i := range parts.Count() {
				if n := b.Client.XLen(ctx, parts.Keys(i).Stream("retention")).Val(); n != 0 {
					return fmt.Sprintf("%d entries in partition %d's stream", n, i)
				}
			}
			return ""
		}
		deadline := time.Now().Add(30 * time.Second)
		for what := left(); what != ""; what = left() {
			if time.Now().After(deadline) {
				t.Fatalf("30s after the runs ended, their retention of 1s long past: %s is left", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
