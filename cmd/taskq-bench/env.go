package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// benchInput is the input of the benchmark task. T carries the time the
// trigger was due (unix ns) for the latency scenario.
type benchInput struct {
	ID string `json:"id"`
	T  int64  `json:"t,omitempty"`
}

// benchResult is the no-op task's result.
type benchResult struct{}

// env is what every scenario shares: the Redis options, the namespace and
// the task definition.
type env struct {
	cfg           *config
	log           *slog.Logger
	out           io.Writer
	redisOpts     *redis.Options
	admin         *redis.Client // setup, cleanup and measurement; never timed
	addr          string
	serverVersion string
	ns            string
	procs         int
	noop          *task.Task[benchInput, benchResult]

	mu sync.Mutex
}

func newEnv(ctx context.Context, cfg *config, log *slog.Logger, out io.Writer) (*env, error) {
	opts, err := redis.ParseURL(cfg.redisURL)
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
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	e := &env{
		cfg: cfg, log: log, out: out, redisOpts: opts, admin: admin, addr: opts.Addr,
		serverVersion: infoField(info, "redis_version"), ns: "bench-" + hex.EncodeToString(b),
		procs: runtime.GOMAXPROCS(0),
	}
	e.noop, err = task.New[benchInput, benchResult]("bench-noop", task.Options{
		Idempotency: task.Status(`input.id`, time.Hour),
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// checkLoopback refuses any Redis that is not on this machine's loopback
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

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return "?"
}

func (e *env) printf(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fmt.Fprintf(e.out, format, args...)
}

// redisClient returns a new go-redis client with the shared options: every
// party of a measurement (baseline, taskq client, each worker) gets its own
// connection pool, as separate processes would.
func (e *env) redisClient() *redis.Client { return redis.NewClient(e.redisOpts) }

// newClient returns a taskq client on its own connection pool.
func (e *env) newClient(batching bool) (*client.Client, *redis.Client, error) {
	rdb := e.redisClient()
	c, err := client.New(client.Options{
		Redis: rdb, Namespace: e.ns, Logger: e.log, DisableTriggerBatching: !batching,
	})
	if err != nil {
		_ = rdb.Close()
		return nil, nil, err
	}
	return c, rdb, nil
}

// startWorkers starts n workers running handler for the no-op task.
func (e *env) startWorkers(ctx context.Context, n int, handler func(worker.Context, benchInput) (benchResult, error)) (stop func(), err error) {
	var ws []*worker.Worker
	var rdbs []*redis.Client
	stop = func() {
		for _, w := range ws {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = w.Shutdown(sctx)
			cancel()
		}
		for _, r := range rdbs {
			_ = r.Close()
		}
	}
	for i := 0; i < n; i++ {
		rdb := e.redisClient()
		rdbs = append(rdbs, rdb)
		w, err := worker.New(worker.Options{
			Redis: rdb, Namespace: e.ns, Name: e.workerName(i),
			Concurrency: e.cfg.workerConcurrency, Logger: e.log,
		})
		if err != nil {
			stop()
			return nil, err
		}
		if err := worker.Handle(w, e.noop, handler); err != nil {
			stop()
			return nil, err
		}
		if err := w.Start(ctx); err != nil {
			stop()
			return nil, err
		}
		ws = append(ws, w)
	}
	return stop, nil
}

// workerName is the name of worker i, shaped like a worker's default name
// (host-pid-random) so memory figures count a realistic consumer name, and
// the same in every scenario so a restarted worker is the same consumer.
func (e *env) workerName(i int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s%02d", host, os.Getpid(), e.ns[len("bench-"):len("bench-")+6], i)
}

func noopHandler(worker.Context, benchInput) (benchResult, error) { return benchResult{}, nil }

// cleanup deletes every key of the benchmark's namespace.
func (e *env) cleanup(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	pattern := "taskq:{" + e.ns + "}:*"
	var cursor uint64
	for {
		keys, next, err := e.admin.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			e.printf("cleanup: %v\n", err)
			return
		}
		if len(keys) > 0 {
			e.admin.Unlink(ctx, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}

func (e *env) close() {
	e.cleanup(context.Background())
	_ = e.admin.Close()
}

// store returns a Store of the namespace on the admin connection.
func (e *env) store() *redisstore.Store { return redisstore.New(e.admin, e.ns) }

// profile starts a CPU profile named after the measurement when -cpuprofile
// is set; the returned function stops it.
func (e *env) profile(name string) func() {
	if e.cfg.profileDir == "" {
		return func() {}
	}
	if err := os.MkdirAll(e.cfg.profileDir, 0o755); err != nil {
		e.printf("profile: %v\n", err)
		return func() {}
	}
	f, err := os.Create(filepath.Join(e.cfg.profileDir, name+".pprof"))
	if err != nil {
		e.printf("profile: %v\n", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		e.printf("profile: %v\n", err)
		return func() {}
	}
	// Allocations are counted from the program's start: the profiles
	// taken at both ends of the measurement give its own with
	// "go tool pprof -base <name>.allocs-before.pprof <name>.allocs.pprof".
	e.writeProfile("allocs", name+".allocs-before")
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
		e.writeProfile("allocs", name+".allocs")
	}
}

// writeProfile writes the named runtime profile into the profile directory.
func (e *env) writeProfile(profile, name string) {
	f, err := os.Create(filepath.Join(e.cfg.profileDir, name+".pprof"))
	if err != nil {
		e.printf("profile: %v\n", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup(profile).WriteTo(f, 0); err != nil {
		e.printf("profile: %v\n", err)
	}
}

// keysCount counts the keys of the namespace matching what (e.g. "key:*").
func (e *env) keysCount(ctx context.Context, what string) (int, error) {
	n := 0
	var cursor uint64
	for {
		keys, next, err := e.admin.Scan(ctx, cursor, "taskq:{"+e.ns+"}:"+what, 1000).Result()
		if err != nil {
			return 0, err
		}
		n += len(keys)
		if cursor = next; cursor == 0 {
			return n, nil
		}
	}
}
