package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/internal/runview"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// receive returns the next value from ch, failing the test if none comes
// within five seconds.
func receive[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// dyingBackend is b's namespace on a Redis connection of its own, which
// the returned hook cuts off for good once its Cut is set.
func dyingBackend(t *testing.T, b *redistest.Backend) (*redistest.Backend, *redistest.Cutoff) {
	t.Helper()
	opt, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	hook := &redistest.Cutoff{}
	rdb.AddHook(hook)
	t.Cleanup(func() { _ = rdb.Close() })
	dying := *b
	dying.Client = rdb
	return &dying, hook
}

// A handler that returns within StartDelay runs while its run still shows
// queued, and its attempt is begun together with its outcome: the run ends
// succeeded with attempt 1, a start time and the worker as consumer, and
// its status-strategy key is released.
func TestDeferredShortRunIsBegunWithItsOutcome(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-short", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		type seen struct {
			info    *client.RunInfo
			err     error
			attempt int
		}
		during := make(chan seen, 1)
		w := startWorker(t, b, worker.Options{Name: "deferred-short-w", StartDelay: 2 * time.Second,
			LeaseDuration: worker.LeaseDurationDefault}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				info, err := c.Inspector().GetRun(ctx, ctx.RunID())
				during <- seen{info, err, ctx.Attempt()}
				return out{ID: x.ID}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "short"})
		if err != nil {
			t.Fatal(err)
		}
		s := receive(t, "the handler to run", during)
		if s.err != nil {
			t.Fatalf("handler reading its run: %v", s.err)
		}
		if s.info.Status != client.StatusQueued || s.info.Attempt != 0 || s.info.StartedAt != nil {
			t.Fatalf("run seen by its handler = %s, attempt %d, started %v; want queued, not begun",
				s.info.Status, s.info.Attempt, s.info.StartedAt)
		}
		if s.attempt != 1 {
			t.Fatalf("handler's Attempt() = %d, want 1", s.attempt)
		}
		info := wait(t, ref)
		if info.Status != client.StatusSucceeded || info.Attempt != 1 {
			t.Fatalf("run = %s after attempt %d, want succeeded after attempt 1", info.Status, info.Attempt)
		}
		if info.StartedAt == nil || info.FinishedAt == nil ||
			info.StartedAt.Before(info.CreatedAt) || info.FinishedAt.Before(*info.StartedAt) {
			t.Fatalf("run created %v, started %v, finished %v", info.CreatedAt, info.StartedAt, info.FinishedAt)
		}
		if res, err := ref.Result(ctx); err != nil || res.ID != "short" {
			t.Fatalf("result = %+v, %v", res, err)
		}
		rec, err := clientlink.Store(c).GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Consumer != w.Name() {
			t.Fatalf("consumer = %q, want %q", rec.Consumer, w.Name())
		}
		if ks, held, err := clientlink.Store(c).GetKey(ctx, "short"); err != nil || held {
			t.Fatalf("key after success = %+v (held %v), %v; want released", ks, held, err)
		}
	})
}

// A handler still running after StartDelay has its attempt begun without
// waiting for it to return: it sees its own run become running, and the
// run then ends succeeded with attempt 1.
func TestDeferredLongRunShowsRunningAfterStartDelay(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-long", task.Options{})
		seen := make(chan client.Status, 1)
		w := startWorker(t, b, worker.Options{StartDelay: 30 * time.Millisecond}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				var st client.Status
				for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if st, _ = runStatus(ctx, c.Handle(ctx.RunID())); st == client.StatusRunning {
						break
					}
				}
				seen <- st
				return out{ID: x.ID}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "long"})
		if err != nil {
			t.Fatal(err)
		}
		if st := receive(t, "the handler to poll its run", seen); st != client.StatusRunning {
			t.Fatalf("status seen by the handler = %q, want running once StartDelay passed", st)
		}
		info := wait(t, ref)
		if info.Status != client.StatusSucceeded || info.Attempt != 1 || info.StartedAt == nil {
			t.Fatalf("run = %s after attempt %d (started %v), want succeeded after attempt 1", info.Status, info.Attempt, info.StartedAt)
		}
		if rec, _ := clientlink.Store(c).GetRun(ctx, ref.ID()); rec == nil || rec.Consumer != w.Name() {
			t.Fatalf("record = %+v, want consumer %q", rec, w.Name())
		}
	})
}

// Cancelling a run whose handler runs but whose attempt is not begun yet
// (the run shows queued) cancels the handler's context with
// ErrRunCancelled, and the outcome the handler returns afterwards is not
// recorded: the run stays cancelled.
func TestDeferredCancelOfQueuedRunReachesItsHandler(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-cancel", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		running := make(chan client.Status, 1)
		causes := make(chan error, 1)
		w := startWorker(t, b, worker.Options{StartDelay: 30 * time.Second, LeaseDuration: time.Minute}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				st, _ := runStatus(ctx, c.Handle(ctx.RunID()))
				running <- st
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return out{ID: "late"}, nil // a success that must not be recorded
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "c"})
		if err != nil {
			t.Fatal(err)
		}
		if st := receive(t, "the handler to run", running); st != client.StatusQueued {
			t.Fatalf("status while the handler runs = %q, want queued", st)
		}
		if st, err := ref.Cancel(ctx); err != nil || st != client.StatusCancelled {
			t.Fatalf("cancel: %v %v", st, err)
		}
		if cause := receive(t, "the handler's context to end", causes); !errors.Is(cause, task.ErrRunCancelled) {
			t.Fatalf("handler context cause = %v, want ErrRunCancelled", cause)
		}
		// Shutdown returns once the handler's outcome has been dealt with.
		if err := w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		info, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != client.StatusCancelled || len(info.Result) != 0 {
			t.Fatalf("run after the handler returned = %s with result %s, want cancelled without result", info.Status, info.Result)
		}
		if _, err := ref.Result(ctx); !errors.Is(err, task.ErrRunCancelled) {
			t.Fatalf("result of the cancelled run: %v", err)
		}
	})
}

// A worker that dies while a handler whose attempt is not begun yet runs
// leaves no trace of that delivery in the run, yet the delivery counts:
// the worker that reclaims the run once the lease lapses runs attempt 2,
// and with max deliveries 1 the run fails as exhausted instead, without
// its handler running again.
func TestDeferredRunOfDeadWorkerCountsTheLostDelivery(t *testing.T) {
	t.Parallel()
	const lease = 500 * time.Millisecond
	// kill triggers a run of tk on a worker that dies once its handler
	// runs, before StartDelay, and returns the run.
	kill := func(t *testing.T, b *redistest.Backend, c *client.Client, tk *task.Task[in, out]) *client.RunRef[out] {
		t.Helper()
		dying, hook := dyingBackend(t, b)
		attempts := make(chan int, 1)
		startWorker(t, dying, worker.Options{Name: "doomed", LeaseDuration: lease, StartDelay: 300 * time.Millisecond},
			func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
					hook.Cut.Store(true)
					attempts <- ctx.Attempt()
					<-ctx.Done()
					return out{}, context.Cause(ctx)
				})
			})
		ref, err := client.RunNoWait(context.Background(), c, tk, in{ID: "d"})
		if err != nil {
			t.Fatal(err)
		}
		if a := receive(t, "the doomed worker's handler", attempts); a != 1 {
			t.Fatalf("first handler's Attempt() = %d, want 1", a)
		}
		if info, err := ref.Get(context.Background()); err != nil || info.Status != client.StatusQueued || info.Attempt != 0 {
			t.Fatalf("run after its worker died = %+v, %v; want queued with no attempt begun", info, err)
		}
		return ref
	}

	t.Run("redelivered as attempt 2", func(t *testing.T) {
		b := redistest.Real(t)
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-dead", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
		ref := kill(t, b, c, tk)
		attempts := make(chan int, 2)
		startWorker(t, b, worker.Options{Name: "survivor", LeaseDuration: lease}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				attempts <- ctx.Attempt()
				return out{ID: x.ID, By: "survivor"}, nil
			})
		})
		if a := receive(t, "the survivor's handler", attempts); a != 2 {
			t.Fatalf("survivor's Attempt() = %d, want 2", a)
		}
		info := wait(t, ref)
		if info.Status != client.StatusSucceeded || info.Attempt != 2 {
			t.Fatalf("run = %s after attempt %d, want succeeded after attempt 2", info.Status, info.Attempt)
		}
		if res, err := ref.Result(context.Background()); err != nil || res.By != "survivor" {
			t.Fatalf("result = %+v, %v", res, err)
		}
	})

	t.Run("max deliveries 1 fails exhausted", func(t *testing.T) {
		b := redistest.Real(t)
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-dead-max1", task.Options{MaxDeliveries: 1})
		ref := kill(t, b, c, tk)
		var ran atomic.Int32
		startWorker(t, b, worker.Options{Name: "survivor", LeaseDuration: lease}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				ran.Add(1)
				return out{ID: x.ID}, nil
			})
		})
		info := wait(t, ref)
		if info.Status != client.StatusFailed || !strings.Contains(info.Error, "delivered 1 times") {
			t.Fatalf("run = %s (%q), want failed as exhausted after 1 delivery", info.Status, info.Error)
		}
		if n := ran.Load(); n != 0 {
			t.Fatalf("the survivor's handler ran %d times, want never", n)
		}
	})
}

// Shutdown while a handler whose attempt is not begun yet waits on its
// context: the attempt is begun and given back at once, so the run is
// queued again with attempt 1 counted, and another worker runs it as
// attempt 2 without waiting for the lease to lapse.
func TestDeferredRunGivenBackOnShutdown(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-shutdown", task.Options{})
		started := make(chan client.Status, 1)
		causes := make(chan error, 1)
		w1 := startWorker(t, b, worker.Options{StartDelay: 5 * time.Second, LeaseDuration: time.Minute,
			ShutdownTimeout: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				st, _ := runStatus(ctx, c.Handle(ctx.RunID()))
				started <- st
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return out{}, ctx.Err()
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if st := receive(t, "the handler to run", started); st != client.StatusQueued {
			t.Fatalf("status while the handler runs = %q, want queued", st)
		}
		if err := w1.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		if cause := receive(t, "the handler's context to end", causes); !errors.Is(cause, worker.ErrShutdown) {
			t.Fatalf("handler context cause = %v, want ErrShutdown", cause)
		}
		info, err := ref.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Status != client.StatusQueued || info.Attempt != 1 {
			t.Fatalf("run after shutdown = %s with attempt %d, want queued with attempt 1 counted", info.Status, info.Attempt)
		}
		attempts := make(chan int, 1)
		startWorker(t, b, worker.Options{LeaseDuration: time.Minute}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				attempts <- ctx.Attempt()
				return out{ID: x.ID}, nil
			})
		})
		if a := receive(t, "the second worker's handler", attempts); a != 2 {
			t.Fatalf("second worker's Attempt() = %d, want 2", a)
		}
		info = wait(t, ref)
		if info.Status != client.StatusSucceeded || info.Attempt != 2 {
			t.Fatalf("run after handover = %s attempt %d, want succeeded after attempt 2", info.Status, info.Attempt)
		}
		// The attempt given back spent none of the run's one allowed.
		if counted, redelivered := runview.CountedAttempts(info); counted != 1 || redelivered != 1 || counted > info.Retries+1 {
			t.Fatalf("run after handover counts %d attempts of at most %d, %d redelivered; want 1 of 1, 1 redelivered",
				counted, info.Retries+1, redelivered)
		}
	})
}

// With a negative StartDelay every attempt is begun before its handler
// runs: the handler sees its run running already.
func TestDeferredDisabledBeginsAttemptBeforeHandler(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("deferred-off", task.Options{})
		type seen struct {
			info *client.RunInfo
			err  error
		}
		during := make(chan seen, 1)
		startWorker(t, b, worker.Options{StartDelay: -1}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				info, err := c.Inspector().GetRun(ctx, ctx.RunID())
				during <- seen{info, err}
				return out{ID: x.ID}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "off"})
		if err != nil {
			t.Fatal(err)
		}
		s := receive(t, "the handler to run", during)
		if s.err != nil {
			t.Fatalf("handler reading its run: %v", s.err)
		}
		if s.info.Status != client.StatusRunning || s.info.Attempt != 1 || s.info.StartedAt == nil {
			t.Fatalf("run seen by its handler = %s, attempt %d, started %v; want running attempt 1",
				s.info.Status, s.info.Attempt, s.info.StartedAt)
		}
		if info := wait(t, ref); info.Status != client.StatusSucceeded || info.Attempt != 1 {
			t.Fatalf("run = %s after attempt %d, want succeeded after attempt 1", info.Status, info.Attempt)
		}
	})
}

// A delivery's lease counts from its read, and a deferred attempt's lease
// is first renewed by the heartbeat after it is begun: a StartDelay that
// would let the lease lapse before that heartbeat is refused, naming both
// settings.
func TestStartDelayMustLeaveTheFirstHeartbeatInTime(t *testing.T) {
	t.Parallel()
	opts := worker.Options{RedisURL: "redis://127.0.0.1:1/0", LeaseDuration: time.Second, HeartbeatInterval: 300 * time.Millisecond}
	opts.StartDelay = 700 * time.Millisecond
	_, err := worker.New(opts)
	if err == nil || !strings.Contains(err.Error(), "StartDelay 700ms plus HeartbeatInterval 300ms") {
		t.Fatalf("New with StartDelay 700ms = %v, want an error naming StartDelay and HeartbeatInterval", err)
	}
	opts.StartDelay = 600 * time.Millisecond
	w, err := worker.New(opts)
	if err != nil {
		t.Fatalf("New with StartDelay 600ms: %v", err)
	}
	_ = w.Shutdown(context.Background())
}

// A cancel whose notice never reaches the worker still stops a handler
// whose attempt is not begun yet: once StartDelay has passed, start.lua
// refuses to begin the attempt and tells the worker the run's error, and
// the handler's context ends with the cause the notice would have given.
// The cancel is written straight into the record here, with no notice, so
// the refused start is the only way the worker can learn of it.
func TestDeferredStartRefusedByCancelWithoutNotice(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, reason string
		check        func(t *testing.T, cause error)
	}{
		{"cancelled", "cancelled by an operator", func(t *testing.T, cause error) {
			var sup *client.RunError
			if !errors.Is(cause, task.ErrRunCancelled) || (errors.As(cause, &sup) && sup.Group == "") {
				t.Fatalf("handler context cause = %v, want ErrRunCancelled", cause)
			}
		}},
		{"superseded", "superseded by run run-2", func(t *testing.T, cause error) {
			var sup *client.RunError
			if !(errors.As(cause, &sup) && sup.Group == "") || sup.By != "run-2" || !errors.Is(cause, task.ErrRunCancelled) {
				t.Fatalf("handler context cause = %v, want a *client.RunError by run-2", cause)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				ctx := context.Background()
				c := newClient(t, b)
				tk := task.Must[in, out]("deferred-refused-"+tc.name, task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
				// The cancel lands before the worker reads the delivery, so
				// the order is fixed: the handler runs (a deferred attempt
				// does not look at the record first), then StartDelay passes
				// and start.lua refuses.
				ref, err := client.RunNoWait(ctx, c, tk, in{ID: "r"})
				if err != nil {
					t.Fatal(err)
				}
				ks, err := redispeek.Store(clientlink.Store(c)).RunKeys(ctx, ref.ID())
				if err != nil {
					t.Fatal(err)
				}
				runKey := ks.Run(ref.ID())
				if err := b.Client.HSet(ctx, runKey, "status", "cancelled", "error", tc.reason).Err(); err != nil {
					t.Fatal(err)
				}
				running := make(chan struct{}, 1)
				causes := make(chan error, 1)
				w := startWorker(t, b, worker.Options{StartDelay: 50 * time.Millisecond, LeaseDuration: time.Minute}, func(w *worker.Worker) {
					worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
						running <- struct{}{}
						<-ctx.Done()
						causes <- context.Cause(ctx)
						return out{ID: "late"}, nil // a success that must not be recorded
					})
				})
				receive(t, "the handler to run", running)
				tc.check(t, receive(t, "the handler's context to end", causes))
				if err := w.Shutdown(ctx); err != nil {
					t.Fatal(err)
				}
				info, err := ref.Get(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if info.Status != client.StatusCancelled || len(info.Result) != 0 || info.Error != tc.reason || info.Attempt != 0 {
					t.Fatalf("run after the handler returned = %s, attempt %d, result %s, error %q; want cancelled as written, no attempt",
						info.Status, info.Attempt, info.Result, info.Error)
				}
			})
		})
	}
}
