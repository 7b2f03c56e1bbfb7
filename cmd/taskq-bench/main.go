// Command taskq-bench measures taskq against Redis doing the same work, side
// by side in one run, and prints a table of figures and ratios:
//
//   - trigger: RunNoWait with unique keys from many concurrent callers,
//     beside the enqueue script sent as the store sends it (FCALL of its
//     function, or EVALSHA on a server without functions) from a plain
//     go-redis client at the same concurrency;
//   - dup: the same with every key already held (duplicate rejection);
//   - e2e: no-op runs triggered and processed by workers to a terminal
//     status, their keys released (status strategy);
//   - latency: trigger → handler start and trigger → result available at a
//     steady offered rate (open loop);
//   - keys: the key-derivation benchmarks of pkg/idempotency (go test -bench);
//   - memory: Redis bytes per queued run, held key and completed run record,
//     and whether the namespace returns to its baseline after retention.
//
// With -cluster it measures instead a single node and a Redis Cluster side
// by side, for what decides how the cluster scales (see scale.go): Redis
// CPU per trigger and per completed run on each, each master's share of
// the script calls and CPU, and trigger → handler start at a paced rate.
//
// It only talks to a Redis on the loopback interface (default the shared
// 127.0.0.1:6379), in a namespace of its own that it deletes when done.
// Defaults finish in under two minutes on two cores.
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
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// config is every knob of a run; flags fill it.
type config struct {
	redisURL    string
	scenarios   []string
	n           int
	concurrency int
	rounds      int
	pipelines   int

	e2eN              int
	workers           int
	workerConcurrency int

	rate     int
	duration time.Duration
	warmup   time.Duration

	memN      int
	retention time.Duration

	variants   []string
	keyBench   string
	profileDir string
	verbose    bool

	// The cluster mode (see scale.go).
	cluster           bool
	redisSet          bool // -redis was given
	clusterPartitions int
	clusterMasters    int
	clusterReplicas   int
	clusterRounds     int
	clusterLatency    time.Duration
	// perMaster gives each backend -concurrency callers and -workers
	// workers per master, so each master serves what the single node does.
	perMaster bool
	// clusterPoolSize is the per-node pool_size given to the cluster URL
	// the clients and workers dial, when the URL sets none (0: go-redis's
	// default).
	clusterPoolSize int
}

var allScenarios = []string{"trigger", "dup", "e2e", "latency", "keys", "memory"}

func parseFlags(args []string) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("taskq-bench", flag.ContinueOnError)
	fs.StringVar(&c.redisURL, "redis", "redis://127.0.0.1:6379/0", "Redis URL; must be on the loopback interface")
	scen := fs.String("scenarios", strings.Join(allScenarios, ","), "scenarios to run, comma separated: "+strings.Join(allScenarios, ","))
	fs.IntVar(&c.n, "n", 10000, "triggers per measurement (trigger, dup)")
	fs.IntVar(&c.concurrency, "concurrency", 50, "concurrent callers (trigger, dup, e2e)")
	fs.IntVar(&c.rounds, "rounds", 5, "rounds per measurement, variants interleaved (trigger, dup, e2e); the median is reported")
	fs.IntVar(&c.pipelines, "ref-pipelines", 4, "goroutines sending pipelines in the pipelined EVALSHA reference")
	fs.IntVar(&c.e2eN, "e2e-n", 10000, "runs per end-to-end measurement")
	fs.IntVar(&c.workers, "workers", 2, "workers (e2e, latency)")
	fs.IntVar(&c.workerConcurrency, "worker-concurrency", 100, "handler slots per worker (e2e, latency)")
	fs.IntVar(&c.rate, "rate", 1000, "offered triggers per second (latency)")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "measured time at the offered rate (latency)")
	fs.DurationVar(&c.warmup, "warmup", time.Second, "unmeasured time before the latency measurement")
	fs.IntVar(&c.memN, "mem-n", 1000, "runs measured (memory)")
	fs.DurationVar(&c.retention, "retention", 3*time.Second, "run record retention (memory; at least 1s)")
	variants := fs.String("variants", "", `run only these variants of trigger and dup, comma separated (e.g. "script,taskq"); the first is the reference of the ratios`)
	fs.StringVar(&c.keyBench, "key-bench", "", `key-derivation results: a file of "go test -bench" output, "" to run it, "off" to skip`)
	fs.StringVar(&c.profileDir, "cpuprofile", "", "write CPU and allocation profiles of each measured variant into this directory")
	fs.BoolVar(&c.verbose, "v", false, "log taskq's own warnings")
	fs.BoolVar(&c.cluster, "cluster", false, "cluster mode: a single node and a Redis Cluster side by side (cost per trigger and per run, each master's share, latency); "+
		"starts private servers, or measures the cluster -redis names when it is a redis+cluster:// URL")
	fs.IntVar(&c.clusterPartitions, "cluster-partitions", 0, "partitions of the namespace on the cluster (cluster mode; the single node has 1; 0: one per master, the default of a namespace first used on a cluster)")
	fs.IntVar(&c.clusterMasters, "cluster-masters", 3, "masters of the private cluster (cluster mode)")
	fs.IntVar(&c.clusterReplicas, "cluster-replicas", 1, "replicas per master of the private cluster (cluster mode)")
	fs.IntVar(&c.clusterRounds, "cluster-rounds", 3, "rounds of the trigger and e2e measurements (cluster mode)")
	fs.BoolVar(&c.perMaster, "cluster-per-master", true, "give each backend -concurrency callers and -workers workers per master, so that each cluster master serves the load the single node serves (cluster mode; false: the same callers and workers on both)")
	fs.IntVar(&c.clusterPoolSize, "cluster-pool-size", 0, "pool_size per node for the cluster's clients and workers when the URL sets none (cluster mode; 0: go-redis's default, 5 x GOMAXPROCS per node)")
	fs.DurationVar(&c.clusterLatency, "cluster-latency", 5*time.Second, "measured time at the offered rate on each backend (cluster mode)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { c.redisSet = c.redisSet || f.Name == "redis" })
	for _, s := range strings.Split(*scen, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(allScenarios, s) {
			return nil, fmt.Errorf("unknown scenario %q (have %s)", s, strings.Join(allScenarios, ", "))
		}
		c.scenarios = append(c.scenarios, s)
	}
	for _, v := range strings.Split(*variants, ",") {
		if v = strings.TrimSpace(v); v != "" {
			c.variants = append(c.variants, v)
		}
	}
	switch {
	case c.n < 1, c.e2eN < 1, c.memN < 1:
		return nil, fmt.Errorf("-n, -e2e-n and -mem-n must be at least 1")
	case c.concurrency < 1, c.workers < 1, c.workerConcurrency < 1, c.pipelines < 1:
		return nil, fmt.Errorf("-concurrency, -workers, -worker-concurrency and -ref-pipelines must be at least 1")
	case c.rounds < 1:
		return nil, fmt.Errorf("-rounds must be at least 1")
	case c.rate < 1 || c.duration <= 0 || c.warmup < 0:
		return nil, fmt.Errorf("-rate and -duration must be positive, -warmup not negative")
	case c.retention < time.Second:
		return nil, fmt.Errorf("-retention %s is below 1s", c.retention)
	case c.clusterPartitions < 0 || c.clusterPartitions > engine.PartitionsMax, c.clusterMasters < 1, c.clusterReplicas < 0, c.clusterRounds < 1, c.clusterLatency <= 0, c.clusterPoolSize < 0:
		return nil, fmt.Errorf("-cluster-partitions must be from 0 to %d, -cluster-masters and -cluster-rounds at least 1, -cluster-replicas and -cluster-pool-size not negative, -cluster-latency positive", engine.PartitionsMax)
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "taskq-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "taskq-bench:", err)
		os.Exit(1)
	}
}

// loadAverage reads the 1, 5 and 15 minute load averages, or "?".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func run(ctx context.Context, cfg *config, out io.Writer) error {
	level := slog.LevelError
	if cfg.verbose {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if cfg.cluster {
		return runCluster(ctx, cfg, log, out)
	}
	env, err := newEnv(ctx, cfg, log, out)
	if err != nil {
		return err
	}
	defer env.close()
	env.printf("taskq-bench: redis %s (server %s), namespace %s, GOMAXPROCS %d, %d CPUs, load average %s\n",
		env.addr, env.serverVersion, env.ns, env.procs, runtime.NumCPU(), loadAverage())
	began := time.Now()
	rep := &report{}
	for _, s := range cfg.scenarios {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		switch s {
		case "trigger":
			err = benchTrigger(ctx, env, rep, false)
		case "dup":
			err = benchTrigger(ctx, env, rep, true)
		case "e2e":
			err = benchEndToEnd(ctx, env, rep)
		case "latency":
			err = benchLatency(ctx, env, rep)
		case "keys":
			err = benchKeys(ctx, env, rep)
		case "memory":
			err = benchMemory(ctx, env, rep)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		env.cleanup(ctx)
	}
	env.printf("\n")
	rep.print(out)
	env.printf("\ntotal %s, load average %s (figures on a busy machine are lower and noisier)\n",
		time.Since(began).Round(100*time.Millisecond), loadAverage())
	return nil
}
