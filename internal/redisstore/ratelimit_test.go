package redisstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// take asks for one request at now and fails the test on an error.
func (f *fixture) take(now time.Time, r engine.RateTake) engine.RateTakeResult {
	f.t.Helper()
	res, errs := f.s.TakeRateLimits(f.ctx, now, []engine.RateTake{r})
	if errs[0] != nil {
		f.t.Fatalf("take %+v: %v", r, errs[0])
	}
	return res[0]
}

func perSecond(limit, units int, token string) engine.RateTake {
	return engine.RateTake{Name: "emails", Limit: limit, Period: time.Second, Units: units, Token: token}
}

// ratelimit_take.lua keeps a sliding window: at most limit units in any
// window of one period, a unit leaving exactly one period after it was
// taken, and a refusal that says how long until enough units leave. A
// count per fixed window would let the second burst below through.
func TestRateLimitTakeIsASlidingWindow(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		t0 := time.UnixMicro(f.now.UnixMicro())
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		for i := 1; i <= 3; i++ {
			if r := f.take(at(900*time.Millisecond), perSecond(3, 1, fmt.Sprint("a", i))); !r.Taken || r.Used != i {
				t.Fatalf("take %d of 3 = %+v; want taken, %d used", i, r, i)
			}
		}
		// 200ms later, past a boundary a fixed window would reset at.
		if r := f.take(at(1100*time.Millisecond), perSecond(3, 1, "b")); r.Taken || r.Wait != 800*time.Millisecond {
			t.Fatalf("take across the boundary = %+v; want refused, wait 800ms", r)
		}
		if r := f.take(at(1900*time.Millisecond-time.Microsecond), perSecond(3, 1, "b")); r.Taken || r.Wait != time.Microsecond {
			t.Fatalf("take a microsecond early = %+v; want refused, wait 1µs", r)
		}
		if r := f.take(at(1900*time.Millisecond), perSecond(3, 1, "b")); !r.Taken || r.Used != 1 {
			t.Fatalf("take once the units left = %+v; want taken, 1 used (the others left with it)", r)
		}
		// The log holds the units of its last period only, and expires.
		log := f.k.RateLimit("emails", "")
		if n := b.Client.ZCard(f.ctx, log).Val(); n != 1 {
			t.Fatalf("log holds %d members, want 1", n)
		}
		if ttl := b.Client.PTTL(f.ctx, log).Val(); ttl <= 0 || ttl > 1001*time.Millisecond {
			t.Fatalf("log expires in %s, want within the period (+1ms)", ttl)
		}
	})
}

// A request takes its units all at once or not at all; the units of a
// refused run are given back by its token, once.
func TestRateLimitUnitsAreTakenAndGivenBackTogether(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		t0 := time.UnixMicro(f.now.UnixMicro())
		if r := f.take(t0, perSecond(5, 2, "a")); !r.Taken || r.Used != 2 {
			t.Fatalf("first 2 of 5 = %+v", r)
		}
		if r := f.take(t0.Add(100*time.Millisecond), perSecond(5, 2, "b")); !r.Taken || r.Used != 4 {
			t.Fatalf("next 2 of 5 = %+v", r)
		}
		// 1 unit is left: the request waits for one of a's to leave.
		if r := f.take(t0.Add(200*time.Millisecond), perSecond(5, 2, "c")); r.Taken || r.Wait != 800*time.Millisecond {
			t.Fatalf("2 more of 5 = %+v; want refused, wait 800ms", r)
		}
		log := f.k.RateLimit("emails", "")
		if n := b.Client.ZCard(f.ctx, log).Val(); n != 4 {
			t.Fatalf("log holds %d units after a refusal, want 4", n)
		}
		back := []engine.RateTake{perSecond(5, 2, "a")}
		if n, errs := f.s.ReturnRateLimits(f.ctx, back); errs[0] != nil || n[0] != 2 {
			t.Fatalf("give a's units back = %v, %v; want 2", n, errs)
		}
		if n, errs := f.s.ReturnRateLimits(f.ctx, back); errs[0] != nil || n[0] != 0 {
			t.Fatalf("give a's units back again = %v, %v; want 0", n, errs)
		}
		if r := f.take(t0.Add(200*time.Millisecond), perSecond(5, 2, "c")); !r.Taken || r.Used != 4 {
			t.Fatalf("2 of 5 once a's are back = %+v", r)
		}
	})
}

// Each key of a limit has its own units, in the partition of the limit's
// name and key: requests on many keys in one call go to their own slots.
func TestRateLimitKeysAreIsolated(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := redisstore.New(b.Client, b.Namespace)
		ctx := t.Context()
		now := time.Now()
		var reqs []engine.RateTake
		for _, key := range []string{"acme", "acme", "globex", "initech", "umbrella"} {
			reqs = append(reqs, engine.RateTake{Name: "emails", Key: key, Limit: 1, Period: time.Minute, Units: 1,
				Token: fmt.Sprint("t", len(reqs))})
		}
		res, errs := s.TakeRateLimits(ctx, now, reqs)
		for i, r := range res {
			if errs[i] != nil {
				t.Fatalf("request %d (%s): %v", i, reqs[i].Key, errs[i])
			}
			if want := i != 1; r.Taken != want {
				t.Errorf("request %d on key %q = %+v; want taken %v (one unit per key)", i, reqs[i].Key, r, want)
			}
		}
		parts, err := s.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{"acme", "globex"} {
			p := redisstore.RateLimitPartition(b.Namespace, "emails", key, parts.Count())
			if n := b.Client.ZCard(ctx, parts.Keys(p).RateLimit("emails", key)).Val(); n != 1 {
				t.Errorf("log of key %q in partition %d holds %d units, want 1", key, p, n)
			}
		}
	})
}

// Without a time of its own the script measures by the server's clock.
func TestRateLimitTakeUsesTheServersClock(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		hour := engine.RateTake{Name: "reports", Limit: 1, Period: time.Hour, Units: 1}
		hour.Token = "a"
		if r := f.take(time.Time{}, hour); !r.Taken {
			t.Fatalf("first = %+v", r)
		}
		hour.Token = "b"
		r := f.take(time.Time{}, hour)
		if r.Taken || r.Wait <= 59*time.Minute || r.Wait > time.Hour {
			t.Fatalf("second within the hour = %+v; want refused, wait just under 1h", r)
		}
		srv, err := b.Client.Time(f.ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		score := b.Client.ZScore(f.ctx, f.k.RateLimit("reports", ""), "a").Val()
		if d := time.Duration(int64(score)-srv.UnixMicro()) * time.Microsecond; d > time.Second || d < -time.Minute {
			t.Fatalf("unit taken at %v µs, server time %v: %s apart", int64(score), srv.UnixMicro(), d)
		}
	})
}

// ratelimit_defer.lua holds a delivered run back: its delivery is
// acknowledged and deleted, the run stays queued with its reason and no
// attempt, and promote.lua queues it again when due, clearing the reason;
// its next start is its first attempt. A delivery of a run that ended or
// moved on is dropped instead.
func TestDeferRunsHoldsBackWithoutAnAttempt(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k", engine.StrategyStatus)
		d := f.delivered(p)
		due := f.now.Add(time.Second)
		res, errs := f.s.DeferRuns(f.ctx, []engine.Deferral{{Delivery: d, Due: due, Reason: `rate limit "emails"`}})
		if errs[0] != nil || !res[0].Held {
			t.Fatalf("defer = %+v, %v; want held", res, errs)
		}
		run, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != engine.StatusQueued || run.Waiting != `rate limit "emails"` || run.Attempt != 0 ||
			b.Client.HGet(f.ctx, f.k.Run(p.RunID), "entry").Val() != "" {
			t.Fatalf("held run = %+v; want queued, waiting, no attempt, no entry", run)
		}
		if n := b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 0 {
			t.Fatalf("stream holds %d entries, want the delivery deleted", n)
		}
		if s := b.Client.ZScore(f.ctx, f.k.Retry(), p.RunID).Val(); int64(s) != due.UnixMilli() {
			t.Fatalf("retry score %v, want %d", s, due.UnixMilli())
		}
		if n, _ := f.s.Promote(f.ctx, 0, due.Add(-time.Millisecond), 10); n != 0 {
			t.Fatalf("promoted %d before due", n)
		}
		if n, err := f.s.Promote(f.ctx, 0, due, 10); n != 1 || err != nil {
			t.Fatalf("promote when due = %d, %v", n, err)
		}
		if run, _ := f.s.GetRun(f.ctx, p.RunID); run.Waiting != "" || run.Status != engine.StatusQueued {
			t.Fatalf("queued again = %+v; want queued, no reason left", run)
		}
		again := f.read("t", "w")
		if len(again) != 1 || again[0].Spec == nil || again[0].Spec.Attempts != 0 {
			t.Fatalf("redelivery = %+v; want one, no attempt begun before it", again)
		}
		if st := f.start(again[0], "w"); !st.Started || st.Attempt != 1 {
			t.Fatalf("start after the wait = %+v; want attempt 1", st)
		}

		// A stale delivery (the run has another) and one of a cancelled
		// run are dropped, the run left alone.
		q := f.params("t", "k2", engine.StrategyStatus)
		dq := f.delivered(q)
		stale := dq
		stale.EntryID = "1-1"
		c := f.params("t", "k3", engine.StrategyStatus)
		dc := f.delivered(c)
		if _, err := f.s.Cancel(f.ctx, c.RunID, "no longer wanted", f.now); err != nil {
			t.Fatal(err)
		}
		res, errs = f.s.DeferRuns(f.ctx, []engine.Deferral{{Delivery: stale, Due: due}, {Delivery: dc, Due: due}})
		if errs[0] != nil || errs[1] != nil || res[0].Held || res[0].Reason != "stale" || res[1].Held || res[1].Reason != "cancelled" {
			t.Fatalf("defer stale and cancelled = %+v, %v", res, errs)
		}
		if run, _ := f.s.GetRun(f.ctx, q.RunID); run.Waiting != "" || b.Client.ZScore(f.ctx, f.k.Retry(), q.RunID).Err() == nil {
			t.Fatalf("a stale delivery held its run back: %+v", run)
		}
	})
}

// The rate limit scripts' cases of TestScriptsReportEachRefusalAsWhatItIs:
// each runs at maxmemory, as start.lua does, since it starts or holds back
// runs already accepted, or only frees memory.
func init() {
	scriptCases = append(scriptCases,
		scriptCase{"ratelimit_take", true, func(f *fixture) prepared {
			log := f.k.RateLimit("emails", "")
			return prepared{
				call: func(s *redisstore.Store) error {
					res, errs := s.TakeRateLimits(f.ctx, time.Time{}, []engine.RateTake{perSecond(5, 1, "a")})
					if errs[0] == nil && !res[0].Taken {
						return fmt.Errorf("not taken: %+v", res[0])
					}
					return errs[0]
				},
				wrong: log,
				done:  func() bool { return f.b.Client.ZCard(f.ctx, log).Val() == 1 },
			}
		}},
		scriptCase{"ratelimit_return", true, func(f *fixture) prepared {
			log := f.k.RateLimit("emails", "")
			if r := f.take(time.Time{}, perSecond(5, 1, "a")); !r.Taken {
				f.t.Fatalf("take = %+v", r)
			}
			return prepared{
				call: func(s *redisstore.Store) error {
					n, errs := s.ReturnRateLimits(f.ctx, []engine.RateTake{perSecond(5, 1, "a")})
					if errs[0] == nil && n[0] != 1 {
						return fmt.Errorf("gave back %d units, want 1", n[0])
					}
					return errs[0]
				},
				wrong: log,
				done:  func() bool { return f.b.Client.ZCard(f.ctx, log).Val() == 0 },
			}
		}},
		scriptCase{"ratelimit_defer", true, func(f *fixture) prepared {
			d := f.delivered(f.params("t", "k", engine.StrategyStatus))
			return prepared{
				call: func(s *redisstore.Store) error {
					res, errs := s.DeferRuns(f.ctx, []engine.Deferral{{Delivery: d, Due: f.now.Add(time.Second), Reason: "r"}})
					if errs[0] == nil && !res[0].Held {
						return fmt.Errorf("not held: %+v", res[0])
					}
					return errs[0]
				},
				wrong: f.k.Run(d.RunID),
				done: func() bool {
					return f.b.Client.HGet(f.ctx, f.k.Run(d.RunID), "waiting").Val() == "r" &&
						f.b.Client.ZScore(f.ctx, f.k.Retry(), d.RunID).Err() == nil
				},
			}
		}},
	)
}
