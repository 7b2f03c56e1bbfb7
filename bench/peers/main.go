// Command peers measures taskq beside asynq on the same redis-server, each
// through its public API, in alternating rounds: triggers with distinct
// TTL keys, the same triggers again (every one a duplicate), and triggers
// consumed by a no-op handler with 50 slots. It prints each round's figures
// and a table of the medians with the ratio taskq/asynq.
//
// It lives in a module of its own (bench/peers/go.mod), so asynq never
// enters taskq's dependencies. Run it with `make bench-peers` from the
// repository's root, or `go run . -h` here for the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// config is what the flags set.
type config struct {
	redisURL string
	n        int
	rounds   int
	callers  int
	slots    int
	warmup   int
	// asynqPool is asynq's connection pool size (0: asynq's default).
	asynqPool int
	ttl       time.Duration
	timeout   time.Duration
	verbose   bool
	// profileDir, when set, receives a CPU profile of every measured
	// phase.
	profileDir string
}

func parseFlags(args []string, errOut io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.redisURL, "redis", "", "Redis to measure on, a redis:// URL on the loopback interface (default: a private redis-server on a free loopback port, stopped at the end)")
	fs.IntVar(&cfg.n, "n", 20000, "triggers per round and system: distinct keys for trigger and end to end, the same keys again for duplicate rejection")
	fs.IntVar(&cfg.rounds, "rounds", 3, "rounds per system, alternating taskq and asynq (medians are reported; at least 3)")
	fs.IntVar(&cfg.callers, "callers", 50, "concurrent callers making the triggers")
	fs.IntVar(&cfg.slots, "slots", 50, "handler slots in the end-to-end scenario (taskq worker Concurrency, asynq server Concurrency)")
	fs.IntVar(&cfg.warmup, "warmup", 0, "triggers per scenario in the warm-up round of each system, not counted (default: n/10, at least 500; -1: no warm-up)")
	fs.IntVar(&cfg.asynqPool, "asynq-pool", 0, "connection pool size of asynq's client and server (default: asynq's, 10 per CPU; taskq's client from a URL has go-redis's 10 per GOMAXPROCS plus 16)")
	fs.DurationVar(&cfg.ttl, "ttl", time.Hour, "TTL of the idempotency key (taskq) and of the uniqueness lock (asynq)")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Minute, "bound on the whole benchmark")
	fs.StringVar(&cfg.profileDir, "cpuprofile", "", "directory for a CPU profile of this process in every measured phase (<system>-<scenario>-<round>.pprof; read with go tool pprof)")
	fs.BoolVar(&cfg.verbose, "v", false, "log the systems' warnings and errors to stderr")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("peers: unexpected arguments %q", strings.Join(fs.Args(), " "))
	}
	switch {
	case cfg.n < 1:
		return nil, fmt.Errorf("peers: -n is %d, want at least 1", cfg.n)
	case cfg.rounds < 3:
		return nil, fmt.Errorf("peers: -rounds is %d, want at least 3 (the table reports medians)", cfg.rounds)
	case cfg.callers < 1:
		return nil, fmt.Errorf("peers: -callers is %d, want at least 1", cfg.callers)
	case cfg.slots < 1:
		return nil, fmt.Errorf("peers: -slots is %d, want at least 1", cfg.slots)
	case cfg.ttl < time.Second:
		return nil, fmt.Errorf("peers: -ttl is %s, want at least 1s (asynq's lock TTL is in seconds)", cfg.ttl)
	}
	if cfg.warmup == 0 {
		cfg.warmup = max(500, cfg.n/10)
	}
	return cfg, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// run starts (or connects to) the Redis, measures every round and prints
// the report to out.
func run(ctx context.Context, cfg *config, out, errOut io.Writer) error {
	level := slog.Level(100) // nothing
	if cfg.verbose {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: level}))
	url := cfg.redisURL
	if url == "" {
		srv, err := startServer(ctx)
		if err != nil {
			return err
		}
		defer srv.stop()
		url = srv.url()
		fmt.Fprintf(out, "private redis-server %s at %s (no persistence)\n", srv.version, srv.addr)
	}
	h, err := newHarness(ctx, cfg, url, log, out)
	if err != nil {
		return err
	}
	defer h.close()
	fmt.Fprintf(out, "redis-server %s at %s; n %d, %d callers, %d slots, %d rounds, key TTL %s; GOMAXPROCS %d; load average %s\n",
		h.serverVersion, h.addr, cfg.n, cfg.callers, cfg.slots, cfg.rounds, cfg.ttl, h.procs, loadAverage())
	systems := []system{newTaskq(h), newAsynq(h)}
	res, err := h.measureAll(ctx, systems)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "load average at the end: %s\n\n", loadAverage())
	printReport(out, cfg, res)
	return nil
}

// loadAverage is /proc/loadavg's first three figures, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
