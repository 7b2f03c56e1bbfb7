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
