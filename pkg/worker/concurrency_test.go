package worker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

type grouped struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Block  bool   `json:"block,omitempty"`
}

// counterKey is the key of a group's running count, in the test's
// namespace (one hash tag, so one slot on a cluster).
func counterKey(b *redistest.Backend, group string) string {
	return "taskq:{" + b.Namespace + "}:test:running:" + group
}

// Several workers, each with its own connection, run 1,000 runs of 20
// groups of MaxRuns 3: a sampler reading every group's running count from
// Redis throughout never sees more than 3, the handlers never count more
// than 3 themselves (INCR's answer), and every run runs exactly once.
func TestConcurrencyMaxRunsIsNeverExceeded(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		const runs, groups, maxRuns, workers = 1000, 20, 3, 3
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-cap", task.Options{
			Concurrency: []task.Concurrency{{Expression: `"g" + input.tenant`, MaxRuns: maxRuns}},
		})
		var (
			mu       sync.Mutex
			ran      = map[string]int{}
			seenMax  atomic.Int64
			sampled  atomic.Int64
			sampleHi atomic.Int64
		)
		for i := range workers {
			rdb := b.NewClient(t)
			wb := *b
			wb.Client = rdb
			startWorker(t, &wb, worker.Options{Name: fmt.Sprintf("w%d", i), Concurrency: 16}, func(w *worker.Worker) {
				worker.Handle(w, tk, func(ctx worker.Context, x grouped) (out, error) {
					key := counterKey(b, "g"+x.Tenant)
					n, err := rdb.Incr(ctx, key).Result()
					if err != nil {
						return out{}, err
					}
					for hi := seenMax.Load(); n > hi && !seenMax.CompareAndSwap(hi, n); hi = seenMax.Load() {
					}
					time.Sleep(time.Millisecond)
					if err := rdb.Decr(context.Background(), key).Err(); err != nil {
						return out{}, err
					}
					mu.Lock()
					ran[x.ID]++
					mu.Unlock()
					return out{ID: x.ID}, nil
				})
			})
		}
		// The sampler reads every group's count in one round trip, until
		// the runs are done.
		keys := make([]string, groups)
		for g := range groups {
			keys[g] = counterKey(b, fmt.Sprintf("g%d", g))
		}
		done := make(chan struct{})
		sampler := make(chan struct{})
		go func() {
			defer close(sampler)
			for {
				select {
				case <-done:
					return
				default:
				}
				vs, err := b.Client.MGet(ctx, keys...).Result()
				if err != nil {
					continue
				}
				sampled.Add(1)
				for _, v := range vs {
					if s, ok := v.(string); ok {
						var n int64
						fmt.Sscan(s, &n)
						for hi := sampleHi.Load(); n > hi && !sampleHi.CompareAndSwap(hi, n); hi = sampleHi.Load() {
						}
					}
				}
			}
		}()
		c := newClient(t, b)
		inputs := make([]grouped, runs)
		for i := range inputs {
			inputs[i] = grouped{ID: fmt.Sprintf("r%d", i), Tenant: fmt.Sprint(i % groups)}
		}
		refs, err := client.RunMany(ctx, c, tk, inputs)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		for _, ref := range refs {
			if _, err := ref.Wait(wctx); err != nil {
				t.Fatalf("run %s: %v", ref.ID(), err)
			}
		}
		close(done)
		<-sampler
		if len(ran) != runs {
			t.Fatalf("%d runs ran, want %d", len(ran), runs)
		}
		for id, n := range ran {
			if n != 1 {
				t.Fatalf("run %s ran %d times", id, n)
			}
		}
		if sampled.Load() < 10 {
			t.Fatalf("only %d samples were taken", sampled.Load())
		}
		if hi := sampleHi.Load(); hi > maxRuns || seenMax.Load() > maxRuns {
			t.Fatalf("running at once: sampled up to %d, counted up to %d; MaxRuns is %d", hi, seenMax.Load(), maxRuns)
		}
		if seenMax.Load() < 2 {
			t.Fatalf("never more than %d at once: the test did not run groups concurrently", seenMax.Load())
		}
		t.Logf("%d samples, highest %d, highest counted %d", sampled.Load(), sampleHi.Load(), seenMax.Load())
	})
}

// One group with 10,000 queued runs ahead of 19 groups with 10 each: the
// small groups' runs all start before the big group's 200th.
func TestConcurrencyBigGroupDoesNotStarveSmallOnes(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		const big, small, smallRuns, maxRuns = 10000, 19, 10, 2
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-fair", task.Options{
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: maxRuns}},
		})
		c := newClient(t, b)
		var inputs []grouped
		for i := range big {
			inputs = append(inputs, grouped{ID: fmt.Sprintf("big-%d", i), Tenant: "big"})
		}
		for g := range small {
			for i := range smallRuns {
				inputs = append(inputs, grouped{ID: fmt.Sprintf("s%d-%d", g, i), Tenant: fmt.Sprintf("s%d", g)})
			}
		}
		enqueued := time.Now()
		for lo := 0; lo < len(inputs); lo += 1000 {
			if _, err := client.RunMany(ctx, c, tk, inputs[lo:min(lo+1000, len(inputs))]); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("enqueued %d runs in %v", len(inputs), time.Since(enqueued))
		began := time.Now()
		var (
			mu         sync.Mutex
			order      []string
			smallStart int
			allSmall   = make(chan struct{})
		)
		startWorker(t, b, worker.Options{Concurrency: 64}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x grouped) (out, error) {
				mu.Lock()
				order = append(order, x.Tenant)
				if x.Tenant != "big" {
					if smallStart++; smallStart == small*smallRuns {
						close(allSmall)
					}
				}
				mu.Unlock()
				return out{ID: x.ID}, nil
			})
		})
		select {
		case <-allSmall:
		case <-time.After(60 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("after 60s only %d of the small groups' %d runs started (%d starts in all)", smallStart, small*smallRuns, len(order))
		}
		mu.Lock()
		defer mu.Unlock()
		bigBefore := 0
		for _, g := range order {
			if g == "big" {
				bigBefore++
			} else if smallStart--; smallStart == 0 {
				break
			}
		}
		if bigBefore >= 200 {
			t.Fatalf("the big group started %d runs before the small groups' last; want fewer than 200", bigBefore)
		}
		t.Logf("big group's starts before the small groups' last: %d, after %v", bigBefore, time.Since(began))
	})
}

// blockingTask returns a task of group expression input.tenant whose
// handler blocks while its input says so, reporting each start and the
// cause its context ends with.
type blocking struct {
	started chan string
	causes  sync.Map // run ID -> error
	release chan struct{}
}

func (bl *blocking) handler(ctx worker.Context, x grouped) (out, error) {
	bl.started <- ctx.RunID()
	if x.Block {
		select {
		case <-bl.release:
		case <-ctx.Done():
			bl.causes.Store(ctx.RunID(), context.Cause(ctx))
			return out{}, context.Cause(ctx)
		}
	}
	return out{ID: x.ID}, nil
}

func newBlocking() *blocking {
	return &blocking{started: make(chan string, 16), release: make(chan struct{})}
}

func (bl *blocking) waitStart(t *testing.T, id string) {
	t.Helper()
	select {
	case got := <-bl.started:
		if got != id {
			t.Fatalf("run %s started, want %s", got, id)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run %s did not start", id)
	}
}

// CancelInProgress: a new run of a full group starts and the oldest
// running one is cancelled; its handler sees a typed cause naming the
// group and the new run, and its status key is released.
func TestConcurrencyCancelInProgress(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-cip", task.Options{
			Idempotency: task.Status(`"cip:" + input.id`, time.Minute),
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1, Strategy: task.CancelInProgress}},
		})
		bl := newBlocking()
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { worker.Handle(w, tk, bl.handler) })
		c := newClient(t, b)
		old, err := client.RunNoWait(ctx, c, tk, grouped{ID: "a", Tenant: "acme", Block: true})
		if err != nil {
			t.Fatal(err)
		}
		bl.waitStart(t, old.ID())
		newer, err := client.RunNoWait(ctx, c, tk, grouped{ID: "b", Tenant: "acme", Block: true})
		if err != nil {
			t.Fatal(err)
		}
		bl.waitStart(t, newer.ID())
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = old.Result(wctx)
		var rc *client.RunError
		if !errors.As(err, &rc) || !strings.Contains(rc.Message, newer.ID()) || !errors.Is(err, task.ErrConcurrencyCancelled) ||
			rc.By != newer.ID() || rc.Group == "" {
			t.Fatalf("old run: %v, want cancelled by its group naming %s", err, newer.ID())
		}
		var cause error
		eventually(t, "the old handler's cause", func() bool {
			v, ok := bl.causes.Load(old.ID())
			if ok {
				cause = v.(error)
			}
			return ok
		})
		var ce *client.RunError
		if !(errors.As(cause, &ce) && ce.Group != "") || ce.RunID != old.ID() || ce.By != newer.ID() || ce.Group != "acme" ||
			!errors.Is(cause, task.ErrConcurrencyCancelled) || !errors.Is(cause, task.ErrRunCancelled) {
			t.Fatalf("cause = %v, want a *client.RunError by %s in acme", cause, newer.ID())
		}
		// The key of the cancelled run is free: the same key makes a new run.
		again, err := client.RunNoWait(ctx, c, tk, grouped{ID: "a", Tenant: "other"})
		if err != nil || again.ID() == old.ID() {
			t.Fatalf("retrigger of the cancelled run's key: %v", err)
		}
		bl.waitStart(t, again.ID())
		close(bl.release)
		for _, ref := range []*client.RunRef[out]{newer, again} {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("run %s: %s", ref.ID(), info.Status)
			}
		}
	})
}

// CancelNewest: a run that comes while its group is full is cancelled at
// once and never starts (its key released); the running one goes on.
func TestConcurrencyCancelNewest(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-cn", task.Options{
			Idempotency: task.Status(`"cn:" + input.id`, time.Minute),
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1, Strategy: task.CancelNewest}},
		})
		bl := newBlocking()
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) { worker.Handle(w, tk, bl.handler) })
		c := newClient(t, b)
		first, err := client.RunNoWait(ctx, c, tk, grouped{ID: "a", Tenant: "acme", Block: true})
		if err != nil {
			t.Fatal(err)
		}
		bl.waitStart(t, first.ID())
		second, err := client.RunNoWait(ctx, c, tk, grouped{ID: "b", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err = second.Result(wctx)
		var rc *client.RunError
		if !errors.As(err, &rc) || !strings.Contains(rc.Message, `concurrency group "acme" was full`) ||
			!errors.Is(err, task.ErrConcurrencyCancelled) || rc.Group != "acme" || rc.By != "" {
			t.Fatalf("second run: %v, want cancelled as its group was full", err)
		}
		// Its key is free again, and another group is not held back.
		again, err := client.RunNoWait(ctx, c, tk, grouped{ID: "b", Tenant: "other"})
		if err != nil || again.ID() == second.ID() {
			t.Fatalf("retrigger of the cancelled run's key: %v", err)
		}
		bl.waitStart(t, again.ID())
		if info := wait(t, again); info.Status != client.StatusSucceeded {
			t.Fatalf("other group's run: %s", info.Status)
		}
		select {
		case id := <-bl.started:
			t.Fatalf("run %s started; the cancelled run must not", id)
		default:
		}
		close(bl.release)
		if info := wait(t, first); info.Status != client.StatusSucceeded {
			t.Fatalf("first run: %s", info.Status)
		}
	})
}

// A slot whose holder stopped renewing it (its worker died) is given back
// once its lease lapses: the run waiting for it, parked meanwhile and
// saying why, then starts.
func TestConcurrencySlotOfADeadHolderIsGivenBackAfterItsLease(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-dead", task.Options{
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}},
		})
		store := connect.Engine(b.Client, b.Namespace)
		// A worker that died holding the group's only slot, its lease 1.5s.
		lapses := time.Now().Add(1500 * time.Millisecond)
		res, errs := store.AcquireSlots(ctx, time.Now(), []engine.AcquireParams{{
			Task: tk.Name(), Group: "acme", RunID: "ghost", Token: "dead-worker 1-1", MaxRuns: 1,
			Strategy: engine.ConcurrencyRoundRobin, Lease: 1500 * time.Millisecond, Created: time.Now(),
		}})
		if errs[0] != nil || res[0].Outcome != engine.AcquireHeld {
			t.Fatalf("ghost holder: %+v, %v", res[0], errs[0])
		}
		bl := newBlocking()
		startWorker(t, b, worker.Options{LeaseDuration: 600 * time.Millisecond}, func(w *worker.Worker) { worker.Handle(w, tk, bl.handler) })
		c := newClient(t, b)
		ref, err := client.RunNoWait(ctx, c, tk, grouped{ID: "a", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		var reason string
		eventually(t, "the run to be parked", func() bool {
			r, err := store.GetRun(ctx, ref.ID())
			if err != nil {
				t.Fatal(err)
			}
			reason = r.Waiting
			return reason != ""
		})
		if reason != `concurrency group "acme" (1/1 running)` {
			t.Fatalf("waiting = %q", reason)
		}
		// The Inspector says so (and through it the CLI, the HTTP API and
		// the dashboard), while the run is queued.
		if info, err := c.Inspector().GetRun(ctx, ref.ID()); err != nil || (info.Status == client.StatusQueued && info.Waiting != reason) {
			t.Fatalf("inspector: %+v, %v", info, err)
		}
		bl.waitStart(t, ref.ID())
		if started := time.Now(); started.Before(lapses) {
			t.Fatalf("the run started at %v, before the dead holder's lease lapsed at %v", started, lapses)
		}
		if info := wait(t, ref); info.Status != client.StatusSucceeded {
			t.Fatalf("run: %s", info.Status)
		}
		if w := b.Client.HGet(ctx, mustRunKey(t, store, ref.ID()), "waiting").Val(); w != "" {
			t.Fatalf("waiting still %q after the run started", w)
		}
		// The worker gives the slot back once Redis holds the outcome,
		// with a call of its own that may land after the waiter heard of
		// the outcome.
		holders := mustConcKeys(t, store, tk.Name(), "acme")
		eventually(t, "the slot to be given back after the run ended", func() bool {
			return b.Client.ZCard(ctx, holders).Val() == 0
		})
	})
}

func mustConcKeys(t *testing.T, e engine.Engine, taskName, group string) string {
	t.Helper()
	k, err := redispeek.ConcurrencyHolders(context.Background(), e, taskName, group)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustRunKey(t *testing.T, e engine.Engine, runID string) string {
	t.Helper()
	k, err := redispeek.RunRecord(context.Background(), e, runID)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// concKillTask allows one run per group at once.
var concKillTask = task.Must[grouped, out]("conc-kill", task.Options{
	Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}},
})

// concurrencyWorker runs concKillTask in a helper process, printing each
// start, and hangs in every handler until it is SIGKILLed.
func concurrencyWorker() int {
	w, err := worker.New(worker.Options{
		RedisURL: os.Getenv(workerURLEnv), Namespace: os.Getenv(workerNSEnv),
		LeaseDuration: time.Second, Logger: quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	worker.Handle(w, concKillTask, func(ctx worker.Context, x grouped) (out, error) {
		fmt.Printf("started %s\n", ctx.RunID())
		select {} // hang until killed
	})
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A worker process SIGKILLed while its run holds its group's only slot:
// the slot is given back once the run's lease lapses, not before; the
// killed run is redelivered and the run that waited starts too, one at a
// time.
func TestKilledWorkersConcurrencySlotIsGivenBackAfterItsLease(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		helper := startHelperWorker(t, "concurrency", b)
		first, err := client.RunNoWait(ctx, c, concKillTask, grouped{ID: "a", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(helper.Next()); len(f) != 2 || f[1] != first.ID() {
			t.Fatalf("helper said %v", f)
		}
		helper.Kill()
		killedAt := time.Now()
		second, err := client.RunNoWait(ctx, c, concKillTask, grouped{ID: "b", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		var running, most atomic.Int32
		var mu sync.Mutex
		startedAt := map[string]time.Time{}
		startWorker(t, b, worker.Options{LeaseDuration: time.Second}, func(w *worker.Worker) {
			worker.Handle(w, concKillTask, func(ctx worker.Context, x grouped) (out, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				mu.Lock()
				startedAt[ctx.RunID()] = time.Now()
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
				return out{ID: x.ID}, nil
			})
		})
		for _, ref := range []*client.RunRef[out]{first, second} {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("run %s: %s", ref.ID(), info.Status)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		// The lease runs from the helper's last renewal, up to one
		// heartbeat (a third of the 1 s lease) before the kill: the slot
		// is free no sooner than the rest of the lease after it (less
		// 100 ms for a late heartbeat).
		for id, at := range startedAt {
			if d := at.Sub(killedAt); d < time.Second-time.Second/3-100*time.Millisecond {
				t.Fatalf("run %s started %v after the kill, before the 1s lease, renewed at most a heartbeat before it, lapsed", id, d)
			}
		}
		if most.Load() != 1 || len(startedAt) != 2 {
			t.Fatalf("%d runs started, up to %d at once; want 2, one at a time", len(startedAt), most.Load())
		}
	})
}

// A worker that died between the two steps of a release (its group
// reserved the slot for the next run in line, but the run was never put
// back in its stream) loses no run: once the reservation lapses, a
// worker's look at the parked runs puts it back, and it runs.
func TestParkedRunForgottenMidReleaseIsPutBack(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-forgot", task.Options{
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 1}},
		})
		c := newClient(t, b)
		ref, err := client.RunNoWait(ctx, c, tk, grouped{ID: "a", Tenant: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		store := connect.Engine(b.Client, b.Namespace)
		if err := store.EnsureGroup(ctx, tk.Name()); err != nil {
			t.Fatal(err)
		}
		part, _ := engine.RunPartition(ref.ID())
		ds, err := store.ReadGroup(ctx, part, "dead", []string{tk.Name()}, 1, 0)
		if err != nil || len(ds) != 1 {
			t.Fatalf("read = %v, %v", ds, err)
		}
		now := time.Now()
		ask := func(id, tok string) engine.AcquireResult {
			res, errs := store.AcquireSlots(ctx, now, []engine.AcquireParams{{Task: tk.Name(), Group: "acme", RunID: id, Token: tok,
				MaxRuns: 1, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: now}})
			if errs[0] != nil {
				t.Fatal(errs[0])
			}
			return res[0]
		}
		ask("holder", "dead holder")
		if r := ask(ref.ID(), "dead "+ds[0].EntryID); r.Outcome != engine.AcquireWait {
			t.Fatalf("acquire = %+v", r)
		}
		if res, errs := store.Park(ctx, now, []engine.ParkParams{{RunID: ref.ID(), Task: tk.Name(), EntryID: ds[0].EntryID, Reason: "full", Group: "acme"}}); errs[0] != nil || res[0] != engine.ParkHeldBack {
			t.Fatalf("park = %v, %v", res, errs)
		}
		// The holder ends; its worker dies before it puts the next run back.
		rres, errs := store.ReleaseSlots(ctx, now, []engine.ReleaseParams{{Task: tk.Name(), Group: "acme", RunID: "holder", Token: "dead holder",
			MaxRuns: 1, Reserve: 300 * time.Millisecond}})
		if errs[0] != nil || len(rres[0].Next) != 1 || rres[0].Next[0] != ref.ID() {
			t.Fatalf("release = %+v, %v", rres, errs)
		}
		startWorker(t, b, worker.Options{LeaseDuration: 600 * time.Millisecond}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x grouped) (out, error) { return out{ID: x.ID}, nil })
		})
		if info := wait(t, ref); info.Status != client.StatusSucceeded || info.Attempt != 1 {
			t.Fatalf("run: %s, attempt %d", info.Status, info.Attempt)
		}
	})
}

// A task with a rate limit and a concurrency group: deliveries pass the
// rate limit first, then the group; every run ends, never more than
// MaxRuns of the group run at once, and no slot is left held.
func TestConcurrencyWithARateLimit(t *testing.T) {
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		tk := task.Must[grouped, out]("conc-rated", task.Options{
			RateLimits:  []task.RateLimit{{Name: "conc-rated", Limit: 4, Period: 300 * time.Millisecond}},
			Concurrency: []task.Concurrency{{Expression: "input.tenant", MaxRuns: 2}},
		})
		var running, most atomic.Int32
		startWorker(t, b, worker.Options{}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x grouped) (out, error) {
				n := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				return out{ID: x.ID}, nil
			})
		})
		c := newClient(t, b)
		inputs := make([]grouped, 10)
		for i := range inputs {
			inputs[i] = grouped{ID: fmt.Sprint(i), Tenant: "acme"}
		}
		refs, err := client.RunMany(ctx, c, tk, inputs)
		if err != nil {
			t.Fatal(err)
		}
		for _, ref := range refs {
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("run %s: %s", ref.ID(), info.Status)
			}
		}
		if most.Load() > 2 {
			t.Fatalf("%d runs of the group ran at once; MaxRuns is 2", most.Load())
		}
		store := connect.Engine(b.Client, b.Namespace)
		key := mustConcKeys(t, store, tk.Name(), "acme")
		eventually(t, "the group's slots to be given back", func() bool { return b.Client.ZCard(ctx, key).Val() == 0 })
	})
}
