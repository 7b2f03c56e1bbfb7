package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// system is one of the queues measured, driven through its public API.
type system interface {
	// name is how the report names it.
	name() string
	// open starts a round on keys no other round uses (a taskq namespace,
	// an asynq queue), label naming it.
	open(ctx context.Context, label string) (round, error)
}

// round is one round of a system.
type round interface {
	// trigger makes trigger i, with key and payload id(i); it must be
	// accepted.
	trigger(ctx context.Context, i int) error
	// duplicate makes trigger i again; it must be rejected as a duplicate.
	duplicate(ctx context.Context, i int) error
	// consumer prepares a consumer of the round's n runs with the
	// configured handler slots, not started yet.
	consumer(ctx context.Context, n int) (consumer, error)
	// close deletes the round's keys and closes its clients.
	close(ctx context.Context) error
}

// consumer processes a round's runs with a no-op handler.
type consumer interface {
	// start starts it.
	start(ctx context.Context) error
	// wait returns once every run has finished: its handler returned and
	// its outcome is recorded in Redis.
	wait(ctx context.Context) error
	// stop shuts it down and checks that every run succeeded once.
	stop(ctx context.Context) error
}

// id is the key and the payload of trigger i: the same for both systems.
func id(i int) string { return "k-" + strconv.Itoa(i) }

// payload is the triggers' input (taskq) and, as JSON, their payload
// (asynq): `{"id":"k-<i>"}`.
type payload struct {
	ID string `json:"id"`
}

// harness holds what every round shares.
type harness struct {
	cfg           *config
	log           *slog.Logger
	out           io.Writer
	url           string
	addr          string
	serverVersion string
	procs         int
	// admin reads INFO and deletes a round's keys; it is never timed.
	admin *redis.Client
	// run names this run of the benchmark in every namespace and queue.
	run string
}

func newHarness(ctx context.Context, cfg *config, url string, log *slog.Logger, out io.Writer) (*harness, error) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	if err := checkLoopback(opts); err != nil {
		return nil, err
	}
	admin := redis.NewClient(opts)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	info, err := admin.Info(pctx, "server").Result()
	if err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("redis at %s does not answer: %w", opts.Addr, err)
	}
	return &harness{
		cfg: cfg, log: log, out: out, url: url, addr: opts.Addr, admin: admin,
		serverVersion: infoField(info, "redis_version"), procs: runtime.GOMAXPROCS(0),
		run: "peers-" + strconv.FormatInt(time.Now().UnixNano()%1e9, 36),
	}, nil
}

// checkLoopback refuses a Redis that is not on this machine's loopback
// interface: the benchmark floods its server.
func checkLoopback(o *redis.Options) error {
	if o.Network == "unix" {
		return nil
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return fmt.Errorf("-redis: address %q: %w", o.Addr, err)
	}
	ips, err := net.LookupIP(host)
	if err != nil {
		return fmt.Errorf("-redis: resolve %q: %w", host, err)
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("-redis: %s is not a loopback address; the benchmark only runs against a local Redis", o.Addr)
		}
	}
	return nil
}

func (h *harness) close() { _ = h.admin.Close() }

func (h *harness) printf(format string, args ...any) { fmt.Fprintf(h.out, format, args...) }

// scenario is one of the three figures.
type scenario int

const (
	scenTrigger scenario = iota
	scenDuplicate
	scenEndToEnd
	scenarios // how many
)

// sample is one measurement of one scenario for one system.
type sample struct {
	// ops is how many triggers (or runs) it counted; elapsed how long
	// they took.
	ops     int
	elapsed time.Duration
	// redisCPU and goCPU are the seconds of CPU the redis-server and this
	// process spent meanwhile.
	redisCPU, goCPU float64
	// triggered is, for the end-to-end scenario, how long the triggers
	// took before the consumer started.
	triggered time.Duration
}

func (s sample) rate() float64 { return float64(s.ops) / s.elapsed.Seconds() }

// drainRate is, for the end-to-end scenario, the rate from the consumer's
// start until the last run finished.
func (s sample) drainRate() float64 { return float64(s.ops) / (s.elapsed - s.triggered).Seconds() }

// redisPerOp and goPerOp are the CPU per operation in µs.
func (s sample) redisPerOp() float64 { return s.redisCPU / float64(s.ops) * 1e6 }
func (s sample) goPerOp() float64    { return s.goCPU / float64(s.ops) * 1e6 }

// results holds every measured round: samples[scenario][system] has one
// sample per round, in order.
type results struct {
	samples [scenarios]map[string][]sample
}

// measureAll runs a warm-up round of each system, every scenario (not
// counted), then cfg.rounds rounds, each measuring trigger and duplicate
// rejection for taskq then asynq, then end to end for taskq then asynq.
func (h *harness) measureAll(ctx context.Context, systems []system) (*results, error) {
	res := &results{}
	for i := range res.samples {
		res.samples[i] = map[string][]sample{}
	}
	if h.cfg.warmup > 0 {
		h.printf("warm-up round, %d triggers per scenario (not counted)\n", h.cfg.warmup)
		for _, s := range systems {
			if _, err := h.roundOf(ctx, s, "warm", h.cfg.warmup); err != nil {
				return nil, fmt.Errorf("%s: warm-up: %w", s.name(), err)
			}
		}
		for _, s := range systems {
			if _, err := h.endToEnd(ctx, s, "e2e-warm", h.cfg.warmup); err != nil {
				return nil, fmt.Errorf("%s: warm-up: end to end: %w", s.name(), err)
			}
		}
	}
	for r := 1; r <= h.cfg.rounds; r++ {
		h.printf("round %d/%d\n", r, h.cfg.rounds)
		for _, s := range systems {
			got, err := h.roundOf(ctx, s, "r"+strconv.Itoa(r), h.cfg.n)
			if err != nil {
				return nil, fmt.Errorf("%s: round %d: %w", s.name(), r, err)
			}
			for sc := scenTrigger; sc <= scenDuplicate; sc++ {
				res.samples[sc][s.name()] = append(res.samples[sc][s.name()], got[sc])
			}
		}
		for _, s := range systems {
			got, err := h.endToEnd(ctx, s, "e2e-r"+strconv.Itoa(r), h.cfg.n)
			if err != nil {
				return nil, fmt.Errorf("%s: round %d: end to end: %w", s.name(), r, err)
			}
			res.samples[scenEndToEnd][s.name()] = append(res.samples[scenEndToEnd][s.name()], got)
		}
	}
	return res, nil
}

// roundOf measures n triggers with distinct keys, then the same n again,
// every one a duplicate, on a round of its own; nobody consumes.
func (h *harness) roundOf(ctx context.Context, s system, label string, n int) ([2]sample, error) {
	var out [2]sample
	rd, err := s.open(ctx, label)
	if err != nil {
		return out, err
	}
	defer func() {
		if err := rd.close(context.WithoutCancel(ctx)); err != nil {
			h.printf("  %s %s: cleanup: %v\n", s.name(), label, err)
		}
	}()
	out[scenTrigger], err = h.phase(ctx, s.name()+"-trigger-"+label, n, func(ctx context.Context) error {
		return drive(ctx, n, h.cfg.callers, rd.trigger)
	})
	if err != nil {
		return out, fmt.Errorf("trigger: %w", err)
	}
	out[scenDuplicate], err = h.phase(ctx, s.name()+"-duplicate-"+label, n, func(ctx context.Context) error {
		return drive(ctx, n, h.cfg.callers, rd.duplicate)
	})
	if err != nil {
		return out, fmt.Errorf("duplicate rejection: %w", err)
	}
	h.printf("  %-6s trigger %s, duplicate rejection %s\n", s.name(), out[scenTrigger], out[scenDuplicate])
	return out, nil
}

// endToEnd measures n triggers with distinct keys made while no consumer
// runs, then a consumer started and draining them: from the first trigger
// until the last run finished.
func (h *harness) endToEnd(ctx context.Context, s system, label string, n int) (sample, error) {
	rd, err := s.open(ctx, label)
	if err != nil {
		return sample{}, err
	}
	defer func() {
		if err := rd.close(context.WithoutCancel(ctx)); err != nil {
			h.printf("  %s %s: cleanup: %v\n", s.name(), label, err)
		}
	}()
	c, err := rd.consumer(ctx, n)
	if err != nil {
		return sample{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = c.stop(context.WithoutCancel(ctx))
		}
	}()
	var triggered time.Duration
	got, err := h.phase(ctx, s.name()+"-"+label, n, func(ctx context.Context) error {
		began := time.Now()
		if err := drive(ctx, n, h.cfg.callers, rd.trigger); err != nil {
			return err
		}
		triggered = time.Since(began)
		if err := c.start(ctx); err != nil {
			return err
		}
		return c.wait(ctx)
	})
	if err != nil {
		return got, err
	}
	got.triggered = triggered
	stopped = true
	if err := c.stop(ctx); err != nil {
		return got, err
	}
	h.printf("  %-6s end to end %s (triggers %s, then start and drain %s)\n", s.name(), got,
		triggered.Round(time.Millisecond), (got.elapsed - triggered).Round(time.Millisecond))
	return got, nil
}

func (s sample) String() string {
	return fmt.Sprintf("%s in %s = %s, redis CPU %.1f µs/op, Go CPU %.1f µs/op",
		group(s.ops), s.elapsed.Round(time.Millisecond), rateString(s.rate()), s.redisPerOp(), s.goPerOp())
}

// phase measures fn, which does ops operations: its time and the CPU the
// redis-server (INFO's used_cpu_sys + used_cpu_user) and this process
// spent meanwhile. With -cpuprofile, the phase's CPU profile is written
// to name.pprof there.
func (h *harness) phase(ctx context.Context, name string, ops int, fn func(context.Context) error) (sample, error) {
	runtime.GC()
	cpu0, err := h.redisCPU(ctx)
	if err != nil {
		return sample{}, err
	}
	stopProfile, err := h.profile(name)
	if err != nil {
		return sample{}, err
	}
	own0 := processCPU()
	began := time.Now()
	err = fn(ctx)
	elapsed := time.Since(began)
	own1 := processCPU()
	stopProfile()
	if err != nil {
		return sample{}, err
	}
	cpu1, err := h.redisCPU(ctx)
	if err != nil {
		return sample{}, err
	}
	return sample{ops: ops, elapsed: elapsed, redisCPU: cpu1 - cpu0, goCPU: own1 - own0}, nil
}

// profile starts a CPU profile written to name.pprof in the -cpuprofile
// directory, if one is set; the function it returns stops it.
func (h *harness) profile(name string) (func(), error) {
	if h.cfg.profileDir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(h.cfg.profileDir, 0o755); err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	f, err := os.Create(filepath.Join(h.cfg.profileDir, name+".pprof"))
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

// redisCPU is the CPU the redis-server has spent, in seconds.
func (h *harness) redisCPU(ctx context.Context) (float64, error) {
	info, err := h.admin.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO cpu: %w", err)
	}
	var sum float64
	for _, f := range []string{"used_cpu_sys", "used_cpu_user"} {
		v, err := strconv.ParseFloat(infoField(info, f), 64)
		if err != nil {
			return 0, fmt.Errorf("INFO cpu: %s: %w", f, err)
		}
		sum += v
	}
	return sum, nil
}

// processCPU is the CPU this process has spent (user and system, every
// thread), in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// drive makes calls 0 to n-1 from callers goroutines, each taking the next
// call as it finishes one, and returns the first error (which stops the
// rest).
func drive(ctx context.Context, n, callers int, call func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for range min(callers, n) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := call(ctx, i); err != nil {
					once.Do(func() { first = fmt.Errorf("trigger %s: %w", id(i), err) })
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// deleteKeys deletes the keys matching each pattern, by SCAN and UNLINK.
func (h *harness) deleteKeys(ctx context.Context, patterns ...string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, p := range patterns {
		var cursor uint64
		for {
			keys, next, err := h.admin.Scan(ctx, cursor, p, 1000).Result()
			if err != nil {
				return err
			}
			if len(keys) > 0 {
				if err := h.admin.Unlink(ctx, keys...).Err(); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	return nil
}
