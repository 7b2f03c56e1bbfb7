package worker_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// starts records when handlers began, by run (shared by the tests of
// rate limits and of scheduled runs).
type starts struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func (s *starts) add(run string) { s.at(run, time.Now()) }

func (s *starts) at(run string, t time.Time) {
	s.mu.Lock()
	if s.times == nil {
		s.times = map[string]time.Time{}
	}
	s.times[run] = t
	s.mu.Unlock()
}

// record notes the first time a handler saw run; later deliveries keep it.
func (s *starts) record(run string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.times[run]; ok {
		return
	}
	if s.times == nil {
		s.times = map[string]time.Time{}
	}
	s.times[run] = time.Now()
}

// of returns when run was first seen, if it was.
func (s *starts) of(run string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.times[run]
	return t, ok
}

func (s *starts) snapshot() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.times)
}

func sortedTimes(m map[string]time.Time) []time.Time {
	out := slices.Collect(maps.Values(m))
	slices.SortFunc(out, func(a, b time.Time) int { return a.Compare(b) })
	return out
}

// mostInAnyWindow is the most times of sorted that fall in one window of
// length w, over every window (a sliding window: each one starting at a
// recorded time holds the most a window can).
func mostInAnyWindow(sorted []time.Time, w time.Duration) (most int, at time.Time) {
	j := 0
	for i := range sorted {
		for j < len(sorted) && sorted[j].Before(sorted[i].Add(w)) {
			j++
		}
		if j-i > most {
			most, at = j-i, sorted[i]
		}
	}
	return most, at
}

// admissions records, by run, when a limit's log says each run took its
// unit (Redis's clock), read every few milliseconds: a unit stays in the
// log for one period after it was taken.
func admissions(t *testing.T, b *redistest.Backend, name string, stop <-chan struct{}) func() map[string]time.Time {
	s := connect.Engine(b.Client, b.Namespace)
	log, err := redispeek.RateLimitLog(t.Context(), s, b.Namespace, name, "")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen = map[string]time.Time{}
		done = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			zs, err := b.Client.ZRangeWithScores(context.Background(), log, 0, -1).Result()
			if err == nil {
				mu.Lock()
				for _, z := range zs {
					run, _, _ := strings.Cut(z.Member.(string), "/")
					seen[run] = time.UnixMicro(int64(z.Score))
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() map[string]time.Time {
		<-done
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(seen)
	}
}

// steadyTask is the task of the 10-second test, run by worker processes
// of their own too (rateLimitedWorker).
var steadyTask = task.Must[in, out]("rl-steady", task.Options{
	RateLimits: []task.RateLimit{{Name: "steady", Limit: 50, Period: time.Second}},
})

// rateLimitedWorker is a worker process (see TestMain) that runs
// steadyTask, printing "started <run> <unix ns>" as each handler begins.
func rateLimitedWorker() int {
	w, err := worker.New(worker.Options{
		RedisURL: os.Getenv(workerURLEnv), Namespace: os.Getenv(workerNSEnv), Concurrency: 16,
		LeaseDuration: 2 * time.Second, Logger: quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := worker.Handle(w, steadyTask, func(ctx worker.Context, x in) (out, error) {
		fmt.Printf("started %s %d\n", ctx.RunID(), time.Now().UnixNano())
		return out{ID: x.ID}, nil
	}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A limit of 50 runs per second, shared by three workers (one in this
// process, two in processes of their own) with a backlog of queued runs: over 10 seconds, no window of one second holds more
// than 50 starts, and they average at least 45 a second. The runs held
// back wait in Redis, their handler slots free, and come back when the
// limit has room.
//
// A run starts when the limit lets it through, by Redis's clock (its
// unit's time in the limit's log); its handler begins a moment later on
// its worker. The window is asserted on the first, read from the log as
// the test goes; every handler that ran must have been let through first.
// The handlers' own times are asserted on for the average, and reported.
func TestRateLimitHoldsStartsToTheLimitInEveryWindow(t *testing.T) {
	t.Parallel()
	const (
		limit  = 50
		period = time.Second
		span   = 10 * time.Second
	)
	b := redistest.Real(t)
	tk := steadyTask
	stop := make(chan struct{})
	var stopOnce sync.Once
	stopReading := func() { stopOnce.Do(func() { close(stop) }) }
	t.Cleanup(stopReading)
	admitted := admissions(t, b, "steady", stop)
	var (
		rec       starts
		elsewhere atomic.Int64 // handlers begun in the other processes
	)
	// One worker in this process, two in processes of their own.
	startWorker(t, b, worker.Options{Concurrency: 16}, func(w *worker.Worker) {
		if err := worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			rec.add(ctx.RunID())
			return out{ID: x.ID}, nil
		}); err != nil {
			t.Fatal(err)
		}
	})
	for range 2 {
		h := startHelperWorker(t, "ratelimit", b)
		go func() {
			for {
				select {
				case l := <-h.lines:
					var run string
					var ns int64
					if _, err := fmt.Sscanf(l, "started %s %d", &run, &ns); err == nil {
						rec.at(run, time.Unix(0, ns))
						elsewhere.Add(1)
					}
				case <-stop:
					return
				}
			}
		}()
	}
	// More than the limit lets start in span, so that the queue never
	// runs dry while it is measured.
	c := newClient(t, b)
	inputs := make([]in, limit*int(span/period)+200)
	for i := range inputs {
		inputs[i] = in{ID: fmt.Sprint(i)}
	}
	for lo := 0; lo < len(inputs); lo += 100 {
		if _, err := client.RunMany(t.Context(), c, tk, inputs[lo:min(lo+100, len(inputs))]); err != nil {
			t.Fatal(err)
		}
	}
	var first time.Time
	eventually(t, "the first start", func() bool {
		if s := sortedTimes(rec.snapshot()); len(s) > 0 {
			first = s[0]
			return true
		}
		return false
	})
	deadline := time.Now().Add(span + 30*time.Second)
	for time.Now().Before(first.Add(span + period)) {
		if time.Now().After(deadline) {
			t.Fatal("clock did not advance")
		}
		time.Sleep(50 * time.Millisecond)
	}
	handled := rec.snapshot()
	stopReading()
	let := admitted()

	var late []time.Duration
	for run, at := range handled {
		a, ok := let[run]
		if !ok {
			t.Fatalf("run %s's handler ran without the limit letting it through (%d runs let through, %d handled)", run, len(let), len(handled))
		}
		late = append(late, at.Sub(a))
	}
	slices.Sort(late)
	most, at := mostInAnyWindow(sortedTimes(let), period)
	hs := sortedTimes(handled)
	n := 0
	for _, at := range hs {
		if at.Before(first.Add(span)) {
			n++
		}
	}
	rate := float64(n) / span.Seconds()
	hmost, _ := mostInAnyWindow(hs, period)
	t.Logf("%d handlers began in %s (%.1f/s), %d of all %d in the other processes; at most %d runs let through in any %s window (%d by the handlers' times); handler began after its run was let through by %s (median), %s (max)",
		n, span, rate, elsewhere.Load(), len(handled), most, period, hmost, late[len(late)/2], late[len(late)-1])
	if elsewhere.Load() == 0 {
		t.Error("no run started in the other worker processes: the limit was not shared across processes")
	}
	if most > limit {
		t.Errorf("%d runs let through in the window of %s from %s, over the limit of %d", most, period, at.Format("15:04:05.000000"), limit)
	}
	// The limit is checked exactly above; the rate only guards against a
	// limiter that holds runs back too long. A refused run waits in the
	// retry zset until its limit has room, then for the forwarder to queue
	// it, a fetch and a take: goroutine wake-ups and round trips that grow
	// with CPU contention, and each lengthens a unit's cycle past the
	// period (on two cores kept busy by other tests, about 260ms: 39.6/s).
	// A run held back a whole period too long halves the rate, to 25/s.
	if floor := 0.6 * limit / period.Seconds(); rate < floor {
		t.Errorf("%.1f starts a second over %s, want at least %.0f: runs are held back past the time their limit has room", rate, span, floor)
	}
	if len(handled) == len(inputs) {
		t.Errorf("all %d runs started: the backlog ran dry, the rate shows nothing", len(handled))
	}
}

// A keyed limit gives each key its own units: key "a" saturated holds its
// extra runs back, queued with the reason and no attempt begun, while key
// "b"'s runs start.
func TestRateLimitKeyedLimitIsolatesKeys(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		tk := task.Must[in, out]("rl-keyed", task.Options{
			RateLimits: []task.RateLimit{{Name: "emails", Limit: 3, Period: time.Hour, Key: "input.mode"}},
		})
		startWorker(t, b, worker.Options{Concurrency: 4}, func(w *worker.Worker) {
			if err := worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil }); err != nil {
				t.Fatal(err)
			}
		})
		c := newClient(t, b)
		var as []*client.RunRef[out]
		for i := range 5 {
			ref, err := client.RunNoWait(t.Context(), c, tk, in{ID: fmt.Sprint("a", i), Mode: "a"})
			if err != nil {
				t.Fatal(err)
			}
			as = append(as, ref)
		}
		held := func(ref *client.RunRef[out]) bool {
			info, err := c.Inspector().GetRun(t.Context(), ref.ID())
			return err == nil && info.Waiting != ""
		}
		eventually(t, "two of key a's runs held back", func() bool {
			n := 0
			for _, ref := range as {
				if held(ref) {
					n++
				}
			}
			return n == 2
		})
		// Key b is not slowed by a: its runs all start and succeed.
		for i := range 3 {
			ref, err := client.RunNoWait(t.Context(), c, tk, in{ID: fmt.Sprint("b", i), Mode: "b"})
			if err != nil {
				t.Fatal(err)
			}
			if info := wait(t, ref); info.Status != client.StatusSucceeded {
				t.Fatalf("key b's run %d = %+v", i, info)
			}
		}
		done := 0
		for _, ref := range as {
			info, err := c.Inspector().GetRun(t.Context(), ref.ID())
			if err != nil {
				t.Fatal(err)
			}
			switch info.Status {
			case client.StatusSucceeded:
				done++
			case client.StatusQueued:
				if info.Waiting != `rate limit "emails" key "a"` || info.Attempt != 0 || info.StartedAt != nil {
					t.Errorf("held run = %+v; want queued, waiting for the limit, no attempt begun", info)
				}
			default:
				t.Errorf("key a's run = %+v", info)
			}
		}
		if done != 3 {
			t.Errorf("%d of key a's runs succeeded, want its limit, 3", done)
		}
	})
}

// A task with two limits starts a run only when both admit it, each
// taking the run's units; when the second refuses, the first's units are
// given back. Limit "b" (3 an hour, 1 unit a run) admits 3 of 4 runs,
// limit "a" (4 an hour, 2 units a run) 2 of those: 2 start, "b" keeps the
// 2 units of the runs that started, and each held run names its limit.
func TestRateLimitTwoLimitsTakeAllOrNone(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		tk := task.Must[in, out]("rl-two", task.Options{
			RateLimits: []task.RateLimit{
				{Name: "b", Limit: 3, Period: time.Hour},
				{Name: "a", Limit: 4, Period: time.Hour, Units: 2},
			},
		})
		startWorker(t, b, worker.Options{Concurrency: 4}, func(w *worker.Worker) {
			if err := worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil }); err != nil {
				t.Fatal(err)
			}
		})
		c := newClient(t, b)
		refs, err := client.RunMany(t.Context(), c, tk, []in{{ID: "1"}, {ID: "2"}, {ID: "3"}, {ID: "4"}})
		if err != nil {
			t.Fatal(err)
		}
		var infos []*client.RunInfo
		eventually(t, "two runs done and two held back", func() bool {
			infos = infos[:0]
			done, held := 0, 0
			for _, ref := range refs {
				info, err := c.Inspector().GetRun(t.Context(), ref.ID())
				if err != nil {
					return false
				}
				infos = append(infos, info)
				switch {
				case info.Status == client.StatusSucceeded:
					done++
				case info.Waiting != "":
					held++
				}
			}
			return done == 2 && held == 2
		})
		reasons := map[string]int{}
		for _, info := range infos {
			if info.Waiting != "" {
				reasons[info.Waiting]++
			}
		}
		// Which limit a held run names depends on how the deliveries were
		// batched: in one batch, limit b refuses the fourth run before a
		// refuses the third; in two, a refuses both. The units below are
		// the same either way.
		if reasons[`rate limit "a"`] < 1 || reasons[`rate limit "a"`]+reasons[`rate limit "b"`] != 2 {
			t.Errorf("held runs wait for %v; want both for a limit of the task, at least one for a", reasons)
		}
		s := connect.Engine(b.Client, b.Namespace)
		units := func(name string) int64 {
			log, err := redispeek.RateLimitLog(t.Context(), s, b.Namespace, name, "")
			if err != nil {
				t.Fatal(err)
			}
			return b.Client.ZCard(t.Context(), log).Val()
		}
		if got := units("b"); got != 2 {
			t.Errorf("limit b holds %d units, want 2: the run limit a refused gives its unit back", got)
		}
		if got := units("a"); got != 4 {
			t.Errorf("limit a holds %d units, want 4 (2 runs of 2)", got)
		}
	})
}

// The held-back run's delivery does not count toward its deliveries: a
// task allowed one delivery still runs a run the limit held back several
// times.
func TestRateLimitedRunDoesNotUseItsDeliveries(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		tk := task.Must[in, out]("rl-deliveries", task.Options{
			MaxDeliveries: 1,
			RateLimits:    []task.RateLimit{{Name: "slow", Limit: 1, Period: 300 * time.Millisecond}},
		})
		startWorker(t, b, worker.Options{Concurrency: 4}, func(w *worker.Worker) {
			if err := worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil }); err != nil {
				t.Fatal(err)
			}
		})
		c := newClient(t, b)
		refs, err := client.RunMany(t.Context(), c, tk, []in{{ID: "1"}, {ID: "2"}, {ID: "3"}, {ID: "4"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		for _, ref := range refs {
			info, err := ref.Wait(ctx)
			if err != nil || info.Status != client.StatusSucceeded || info.Attempt != 1 || info.Waiting != "" {
				t.Fatalf("run %s = %+v, %v; want succeeded at its first and only attempt", ref.ID(), info, err)
			}
		}
	})
}
