package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/events"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// waitUntil polls cond until it holds, or fails the test after limit.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A run that sleeps durably shows as waiting with what it waits for, then
// wakes on its own, runs its handler again and skips the step it completed
// before the sleep. The sleep is long enough to be seen waiting on a busy
// machine: one already over when it is recorded does not suspend.
func TestSleepForWaitsThenReplays(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("nap", task.Options{})
		var before, after atomic.Int32
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				if _, err := worker.Step(ctx, "before", func(context.Context, string) (int, error) {
					return int(before.Add(1)), nil
				}); err != nil {
					return out{}, err
				}
				if err := worker.SleepFor(ctx, 3*time.Second); err != nil {
					return out{}, err
				}
				after.Add(1)
				return out{ID: x.ID, By: fmt.Sprint(ctx.Attempt())}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		var info *client.RunInfo
		waitUntil(t, 10*time.Second, "the run to wait", func() bool {
			info, err = c.Inspector().GetRun(ctx, ref.ID())
			return err == nil && info.Status == client.StatusWaiting
		})
		if !strings.HasPrefix(info.Waiting, "sleep until ") || info.ScheduledAt == nil || info.Failures != 0 || info.StepCount != 2 {
			t.Fatalf("waiting run = %+v; want what it waits for, when it wakes, no failure", info)
		}
		res, err := ref.Result(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.By != "2" || before.Load() != 1 || after.Load() != 1 {
			t.Fatalf("result by attempt %s, step ran %d times, after the sleep %d; want attempt 2, once, once",
				res.By, before.Load(), after.Load())
		}
		if info, _ = ref.Get(ctx); info.Status != client.StatusSucceeded || info.Waiting != "" {
			t.Fatalf("run after waking = %+v", info)
		}
	})
}

// While 1,000 runs sleep, a worker of 10 slots serves other work: a
// sleeping run holds no slot.
func TestSleepingRunsHoldNoSlot(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	ctx := context.Background()
	c := newClient(t, b)
	sleeper := task.Must[in, out]("sleeper", task.Options{})
	quick := task.Must[in, out]("quick", task.Options{})
	wake := time.Now().Add(8 * time.Second)
	var woke atomic.Int32
	startWorker(t, b, worker.Options{Concurrency: 10}, func(w *worker.Worker) {
		worker.Handle(w, sleeper, func(ctx worker.Context, x in) (out, error) {
			if err := worker.SleepFor(ctx, time.Until(wake)); err != nil {
				return out{}, err
			}
			woke.Add(1)
			return out{ID: x.ID}, nil
		})
		worker.Handle(w, quick, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
	})
	const sleepers = 1000
	inputs := make([]in, sleepers)
	for i := range inputs {
		inputs[i] = in{ID: fmt.Sprint("s", i)}
	}
	refs, err := client.RunMany(ctx, c, sleeper, inputs)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "1,000 runs to sleep", func() bool {
		n, err := c.Inspector().CountRuns(ctx, client.ListOptions{})
		return err == nil && n.Tasks["sleeper"][client.StatusWaiting] == sleepers
	})
	for i := range 50 {
		r, err := client.Run(ctx, c, quick, in{ID: fmt.Sprint("q", i)})
		if err != nil || r.ID != fmt.Sprint("q", i) {
			t.Fatalf("quick run %d = %+v, %v", i, r, err)
		}
	}
	if n := woke.Load(); n != 0 || time.Now().After(wake) {
		t.Fatalf("%d sleepers woke before the quick runs were served (wake at %v); the test proves nothing", n, wake)
	}
	for _, r := range refs[:10] {
		if _, err := r.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, 60*time.Second, "every sleeper to wake and end", func() bool {
		n, err := c.Inspector().CountRuns(ctx, client.ListOptions{})
		return err == nil && n.Tasks["sleeper"][client.StatusSucceeded] == sleepers
	})
	if n := woke.Load(); n != sleepers {
		t.Fatalf("%d sleepers ran past their sleep, want each once: %d", n, sleepers)
	}
}

// A run waiting for a signal gives its slot back; the signal wakes it and
// the handler's next run gets it. A wait with a timeout ends with
// ErrWaitTimeout when none comes.
func TestWaitForSignal(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("approval", task.Options{})
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				var timeout time.Duration
				if x.ID == "impatient" {
					timeout = 300 * time.Millisecond
				}
				first, err := worker.WaitForSignal(ctx, timeout)
				if errors.Is(err, worker.ErrWaitTimeout) {
					return out{ID: x.ID, By: "timeout"}, nil
				}
				if err != nil {
					return out{}, err
				}
				second, err := worker.WaitForSignal(ctx, 0)
				if err != nil {
					return out{}, err
				}
				if first.SignalID == "" || first.SignalID == second.SignalID || first.SentAt.IsZero() || second.SentAt.Before(first.SentAt) {
					return out{}, worker.NonRetryable(fmt.Errorf("signals %+v and %+v: want each its own ID and when it was sent", first, second))
				}
				return out{ID: x.ID, By: string(first.Payload) + "," + string(second.Payload)}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "patient"})
		if err != nil {
			t.Fatal(err)
		}
		impatient, err := client.RunNoWait(ctx, c, tk, in{ID: "impatient"})
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i <= 2; i++ {
			var info *client.RunInfo
			waitUntil(t, 10*time.Second, "the run to wait for a signal", func() bool {
				info, err = c.Inspector().GetRun(ctx, ref.ID())
				return err == nil && info.Status == client.StatusWaiting
			})
			if info.Waiting != "signal" || info.ScheduledAt != nil {
				t.Fatalf("waiting run = %+v; want waiting for a signal, with no due time", info)
			}
			if _, err := ref.Signal(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		res, err := ref.Result(ctx)
		if err != nil || res.By != "1,2" {
			t.Fatalf("result = %+v, %v; want the two signals in order", res, err)
		}
		if res, err := impatient.Result(ctx); err != nil || res.By != "timeout" {
			t.Fatalf("impatient result = %+v, %v; want its wait timed out", res, err)
		}
	})
}

// A handler whose waits differ from the ones an earlier attempt recorded
// is refused with a *NondeterminismError, and its run fails at once. The
// first attempt waits for a signal without a limit, so it suspends however
// slowly it runs (a short sleep may be over by the time it is recorded,
// and then does not suspend); the signal, sent once the run waits, runs
// the handler again, and its second attempt sleeps at the same place.
func TestChangedWaitsAreRefused(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c := newClient(t, b)
		tk := task.Must[in, out]("fickle", task.Options{Retries: 3})
		refused := make(chan error, 1)
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				if ctx.Attempt() == 1 {
					_, err := worker.WaitForSignal(ctx, 0)
					return out{}, err
				}
				err := worker.SleepFor(ctx, time.Hour)
				refused <- err
				return out{}, err
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "f"})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 30*time.Second, "the run to wait for a signal", func() bool {
			info, err := ref.Get(ctx)
			return err == nil && info.Status == client.StatusWaiting
		})
		if _, err := ref.Signal(ctx, "go"); err != nil {
			t.Fatal(err)
		}
		got := waitFor(t, refused)
		var nd *worker.NondeterminismError
		if !errors.As(got, &nd) || nd.Wait != 1 || nd.Recorded != "signal" || nd.Made != "sleep" {
			t.Fatalf("wait error = %v; want a NondeterminismError for wait 1, signal then sleep", got)
		}
		_, err = ref.Result(ctx)
		info, _ := ref.Get(ctx)
		if err == nil || info.Status != client.StatusFailed || info.Attempt != 2 || !strings.Contains(info.Error, "durable wait 1") {
			t.Fatalf("run = %+v, result error %v; want failed on attempt 2 without a retry", info, err)
		}
	})
}

// napHelperWorker runs napTask in a helper process: it charges through a
// step, prints "charged <receipt>", sleeps durably, and ships through a
// second step after waking.
var napTask = task.Must[in, out]("durable-nap", task.Options{})

func napHandler(cnt counter, report func(string)) func(worker.Context, in) (out, error) {
	return func(ctx worker.Context, x in) (out, error) {
		receipt, err := worker.Step(ctx, "charge", func(context.Context, string) (string, error) {
			return fmt.Sprint("receipt-", cnt.Incr("charges")), nil
		})
		if err != nil {
			return out{}, err
		}
		report("charged " + receipt)
		if err := worker.SleepFor(ctx, 1500*time.Millisecond); err != nil {
			return out{}, err
		}
		shipped, err := worker.Step(ctx, "ship", func(context.Context, string) (int64, error) {
			return cnt.Incr("ships"), nil
		})
		if err != nil {
			return out{}, err
		}
		report("shipped")
		return out{ID: receipt, By: fmt.Sprint(shipped)}, nil
	}
}

func napWorker() int {
	return durableHelper(func(w *worker.Worker, cnt counter) error {
		return worker.Handle(w, napTask, napHandler(cnt, func(s string) { fmt.Println(s) }))
	})
}

// durableHelper runs a helper worker process whose handlers register
// adds, counting their steps' work in Redis with cnt.
func durableHelper(register func(w *worker.Worker, cnt counter) error) int {
	conn, err := connect.Open(connect.Options{URL: os.Getenv(workerURLEnv)})
	if err != nil {
		return 1
	}
	ns := os.Getenv(workerNSEnv)
	w, err := worker.New(worker.Options{Redis: conn.Redis, Namespace: ns, LeaseDuration: time.Second, Logger: quiet})
	if err != nil {
		return 1
	}
	if err := register(w, counter{conn.Redis, "taskq:{" + ns + "}:test:"}); err != nil {
		return 1
	}
	if err := w.Run(context.Background()); err != nil {
		return 1
	}
	return 0
}

// A worker SIGKILLed around a durable sleep (as the run suspends, and
// while it sleeps): the run resumes on another worker, the step before the
// sleep does not run again, and the run ends once.
func TestKilledDuringDurableSleep(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		cnt := counter{b.Client, "taskq:{" + b.Namespace + "}:test:"}
		helper := startHelperWorker(t, "nap", b)
		refs := make([]*client.RunRef[out], 2)
		for i := range refs {
			ref, err := client.RunNoWait(ctx, c, napTask, in{ID: fmt.Sprint("nap-", i)})
			if err != nil {
				t.Fatal(err)
			}
			refs[i] = ref
			if l := helper.Next(); !strings.HasPrefix(l, "charged ") {
				t.Fatalf("helper said %q", l)
			}
		}
		// The first run is surely waiting; the second may still be
		// suspending when the worker dies.
		waitUntil(t, 10*time.Second, "the first run to sleep", func() bool {
			info, err := refs[0].Get(ctx)
			return err == nil && info.Status == client.StatusWaiting
		})
		helper.Kill()
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, napTask, napHandler(cnt, func(string) {}))
		})
		for i, ref := range refs {
			res, err := ref.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.ID != fmt.Sprint("receipt-", i+1) {
				t.Fatalf("run %d charged %q; want its own first receipt", i, res.ID)
			}
		}
		if ch, sh := b.Client.Get(ctx, cnt.key+"charges").Val(), b.Client.Get(ctx, cnt.key+"ships").Val(); ch != "2" || sh != "2" {
			t.Fatalf("charges %s, ships %s; want each step once per run", ch, sh)
		}
	})
}

// A run waiting for an event of a key gives its slot back; each push of
// the key wakes it to look, and the first event that passes its filter
// ends the wait. A wait with a timeout ends with ErrWaitTimeout, and a
// filter that does not compile is an error that names it.
func TestWaitForEvent(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		ing, err := events.New(c, events.Options{})
		if err != nil {
			t.Fatal(err)
		}
		tk := task.Must[in, out]("await-payment", task.Options{})
		var looks atomic.Int32
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				looks.Add(1)
				switch x.ID {
				case "impatient":
					_, err := worker.WaitForEvent(ctx, "order.paid", `input.id == "never"`, 300*time.Millisecond)
					if errors.Is(err, worker.ErrWaitTimeout) {
						return out{ID: x.ID, By: "timeout"}, nil
					}
					return out{}, err
				case "bad-filter":
					_, err := worker.WaitForEvent(ctx, "order.paid", `input.id ==`, 0)
					return out{ID: x.ID, By: fmt.Sprint(err)}, nil
				case "negative":
					_, eerr := worker.WaitForEvent(ctx, "order.paid", "", -time.Second)
					_, serr := worker.WaitForSignal(ctx, -time.Second)
					return out{ID: x.ID, By: fmt.Sprint(eerr, "|", serr)}, nil
				}
				ev, err := worker.WaitForEvent(ctx, "order.paid", `input.id == "`+x.ID+`"`, 0)
				if err != nil {
					return out{}, err
				}
				return out{ID: x.ID, By: ev.ID + " " + string(ev.Payload)}, nil
			})
		})
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "o-2"})
		if err != nil {
			t.Fatal(err)
		}
		waiting := func() {
			t.Helper()
			var info *client.RunInfo
			waitUntil(t, 10*time.Second, "the run to wait for an event", func() bool {
				info, err = c.Inspector().GetRun(ctx, ref.ID())
				return err == nil && info.Status == client.StatusWaiting
			})
			if info.Waiting != "event order.paid" {
				t.Fatalf("waiting run = %+v; want waiting for an event of order.paid", info)
			}
		}
		waiting()
		if _, err := ing.Push(ctx, "order.paid", json.RawMessage(`{"id":"o-1"}`), nil); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, "the run to look at the event that does not match", func() bool { return looks.Load() >= 2 })
		waiting()
		ev, err := ing.Push(ctx, "order.paid", json.RawMessage(`{"id":"o-2"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ref.Result(ctx)
		if err != nil || res.By != ev.ID+` {"id":"o-2"}` {
			t.Fatalf("result = %+v, %v; want the matching event %s", res, err, ev.ID)
		}
		if res, err := client.Run(ctx, c, tk, in{ID: "impatient"}); err != nil || res.By != "timeout" {
			t.Fatalf("impatient result = %+v, %v; want its wait timed out", res, err)
		}
		if res, err := client.Run(ctx, c, tk, in{ID: "bad-filter"}); err != nil || !strings.Contains(res.By, `event filter "input.id ==" does not compile`) {
			t.Fatalf("bad filter result = %+v, %v; want an error naming the filter", res, err)
		}
		// A negative timeout is refused, not taken for no limit.
		if res, err := client.Run(ctx, c, tk, in{ID: "negative"}); err != nil ||
			res.By != "worker: WaitForEvent: timeout -1s is negative; use 0 to wait without a limit|"+
				"worker: WaitForSignal: timeout -1s is negative; use 0 to wait without a limit" {
			t.Fatalf("negative timeouts = %+v, %v; want both refused, naming the timeout", res, err)
		}
	})
}

// aheadClock tells a time ahead of the machine's by d.
type aheadClock struct{ d time.Duration }

func (c aheadClock) Now() time.Time { return time.Now().Add(c.d) }

// An event whose pusher died after storing it and before waking the runs
// waiting for its key is not lost to them: a worker's janitor wakes them
// once engine.EventWakeGrace has passed (here a second worker's, whose clock
// runs past it), and the run ends with that event.
func TestEventWaitWokenWhenItsPusherDied(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("await-invoice", task.Options{})
		register := func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				ev, err := worker.WaitForEvent(ctx, "invoice.paid", `input.id == "`+x.ID+`"`, 0)
				if err != nil {
					return out{}, err
				}
				return out{ID: x.ID, By: ev.ID}, nil
			})
		}
		first := startWorker(t, b, worker.Options{}, register)
		ref, err := client.RunNoWait(ctx, c, tk, in{ID: "i-1"})
		if err != nil {
			t.Fatal(err)
		}
		waitUntil(t, 10*time.Second, "the run to wait for an event", func() bool {
			info, err := ref.Get(ctx)
			return err == nil && info.Status == client.StatusWaiting
		})
		if err := first.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		// Stored as by a pusher that dies next: nothing wakes the run.
		ev := &engine.PushEventParams{ID: uuid.NewString(), Key: "invoice.paid",
			Payload: []byte(`{"id":"i-1"}`), Meta: []byte(`{}`), Now: time.Now(), Retention: time.Hour}
		if _, err := connect.Engine(b.Client, b.Namespace).PushEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		id := ev.ID // as placed in a partition
		if info, err := ref.Get(ctx); err != nil || info.Status != client.StatusWaiting {
			t.Fatalf("run after the event was stored unwoken = %+v, %v; want still waiting", info, err)
		}
		startWorker(t, b, worker.Options{Clock: aheadClock{2 * engine.EventWakeGrace}}, register)
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if res, err := ref.Result(rctx); err != nil || res.By != id {
			t.Fatalf("result = %+v, %v; want the run woken by the janitor, ended with event %s", res, err, id)
		}
	})
}

// stockTask waits durably for an event: it reserves through a step,
// prints "reserved <receipt>", waits for stock.arrived of its SKU, and
// ships through a second step.
var stockTask = task.Must[in, out]("durable-stock", task.Options{})

func stockHandler(cnt counter, report func(string)) func(worker.Context, in) (out, error) {
	return func(ctx worker.Context, x in) (out, error) {
		receipt, err := worker.Step(ctx, "reserve", func(context.Context, string) (string, error) {
			return fmt.Sprint("reservation-", cnt.Incr("reserves")), nil
		})
		if err != nil {
			return out{}, err
		}
		report("reserved " + receipt)
		ev, err := worker.WaitForEvent(ctx, "stock.arrived", `input.sku == "`+x.ID+`"`, 0)
		if err != nil {
			return out{}, err
		}
		if _, err := worker.Step(ctx, "ship", func(context.Context, string) (int64, error) {
			return cnt.Incr("ships"), nil
		}); err != nil {
			return out{}, err
		}
		return out{ID: receipt, By: ev.ID}, nil
	}
}

func stockWorker() int {
	return durableHelper(func(w *worker.Worker, cnt counter) error {
		return worker.Handle(w, stockTask, stockHandler(cnt, func(s string) { fmt.Println(s) }))
	})
}

// A worker SIGKILLed while its runs wait for an event (one surely
// waiting, one perhaps still suspending): the events wake them on another
// worker, the step before the wait does not run again, and each run ends
// once with its own event.
func TestKilledDuringEventWait(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		ing, err := events.New(c, events.Options{})
		if err != nil {
			t.Fatal(err)
		}
		cnt := counter{b.Client, "taskq:{" + b.Namespace + "}:test:"}
		helper := startHelperWorker(t, "stock", b)
		refs := make([]*client.RunRef[out], 2)
		for i := range refs {
			ref, err := client.RunNoWait(ctx, c, stockTask, in{ID: fmt.Sprint("sku-", i)})
			if err != nil {
				t.Fatal(err)
			}
			refs[i] = ref
			if l := helper.Next(); !strings.HasPrefix(l, "reserved ") {
				t.Fatalf("helper said %q", l)
			}
		}
		waitUntil(t, 10*time.Second, "the first run to wait", func() bool {
			info, err := c.Inspector().GetRun(ctx, refs[0].ID())
			return err == nil && info.Status == client.StatusWaiting
		})
		helper.Kill()
		evs := make([]string, len(refs))
		for i := range refs {
			ev, err := ing.Push(ctx, "stock.arrived", json.RawMessage(fmt.Sprintf(`{"sku":"sku-%d"}`, i)), nil)
			if err != nil {
				t.Fatal(err)
			}
			evs[i] = ev.ID
		}
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, stockTask, stockHandler(cnt, func(string) {}))
		})
		for i, ref := range refs {
			res, err := ref.Result(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.ID != fmt.Sprint("reservation-", i+1) || res.By != evs[i] {
				t.Fatalf("run %d = %+v; want its own reservation and event %s", i, res, evs[i])
			}
		}
		if r, s := b.Client.Get(ctx, cnt.key+"reserves").Val(), b.Client.Get(ctx, cnt.key+"ships").Val(); r != "2" || s != "2" {
			t.Fatalf("reserves %s, ships %s; want each step once per run", r, s)
		}
	})
}
