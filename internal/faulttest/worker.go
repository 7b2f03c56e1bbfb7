package faulttest

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// RoleEnv makes a process a worker: it holds the WorkerConfig as JSON.
const RoleEnv = "TASKQ_FAULT_WORKER"

// WorkerConfig configures a worker process.
type WorkerConfig struct {
	RedisURL  string
	Namespace string
	// Name is the worker's consumer name and the process name in its
	// history; a restarted worker needs a new one.
	Name        string
	Concurrency int
	Lease       time.Duration
	Tasks       TaskConfig
	// HistoryDir receives <Name>.jsonl; empty records nothing.
	HistoryDir string
	// PrintStarts prints "started <run id> <attempt>" as each handler
	// begins, for tests that wait for it.
	PrintStarts bool
	// PauseBeforeFinish makes the process SIGSTOP itself just before it
	// sends its first finish, after printing "pausing <run id> <attempt>":
	// the worst moment for a lease to lapse.
	PauseBeforeFinish bool
	// Verbose logs the worker's warnings to stderr.
	Verbose bool
	// LogJSON logs the worker's records from Info up to stderr as JSON,
	// and leaves go-redis's lines to the worker (worker.Options.Logger)
	// rather than to this package's adapter.
	LogJSON bool
	// ShutdownTimeout is the worker's (default 500ms).
	ShutdownTimeout time.Duration
	// Schedules are registered by the worker's scheduler when it starts
	// (worker.Options.Schedules).
	Schedules []task.Schedule
}

// MaybeRunRole runs the worker process and exits when RoleEnv is set, or
// the ingester process when IngesterRoleEnv is; otherwise it returns at
// once.
func MaybeRunRole() {
	if raw := os.Getenv(IngesterRoleEnv); raw != "" {
		runIngesterRole(raw)
	}
	raw := os.Getenv(RoleEnv)
	if raw == "" {
		return
	}
	var cfg WorkerConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest worker:", err)
		os.Exit(2)
	}
	// go-redis logs each failed dial on its own (the tests kill and
	// restart Redis on purpose): its lines join the worker's log, as
	// warnings, shown only with Verbose.
	if !cfg.LogJSON {
		redis.SetLogger(libraryLog{workerLog(cfg)})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunWorker(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "faulttest worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// workerLog is a worker process's log: its warnings on stderr with
// Verbose, nothing otherwise.
func workerLog(cfg WorkerConfig) *slog.Logger {
	if cfg.LogJSON {
		return slog.New(slog.NewJSONHandler(os.Stderr, nil))
	}
	level := slog.LevelError + 1
	if cfg.Verbose {
		level = slog.LevelWarn
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// libraryLog writes go-redis's log lines to a slog.Logger as warnings.
type libraryLog struct{ log *slog.Logger }

// Printf logs one line.
func (l libraryLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}

// RunWorker runs a worker of every task in Definitions until ctx ends,
// printing "ready" to out once it consumes.
func RunWorker(ctx context.Context, cfg WorkerConfig, out io.Writer) error {
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 8
	}
	if cfg.Lease == 0 {
		cfg.Lease = time.Second
	}
	rdb, err := Dial(cfg.RedisURL)
	if err != nil {
		return err
	}
	defer rdb.Close()
	var printMu sync.Mutex
	say := func(format string, args ...any) {
		printMu.Lock()
		defer printMu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
	}
	if cfg.HistoryDir != "" {
		rec, f, err := history.Create(cfg.HistoryDir, cfg.Name)
		if err != nil {
			return err
		}
		defer f.Close()
		hook := history.NewHook(rec)
		if cfg.PauseBeforeFinish {
			var once sync.Once
			hook.BeforeSend = func(ctx context.Context, op history.Op) context.Context {
				if op.Kind != history.KindFinish {
					return ctx
				}
				paused := false
				once.Do(func() {
					say("pausing %s %d", op.RunID, op.Attempt)
					stopSelf()
					paused = true
				})
				if !paused {
					return ctx
				}
				// The write was already on its way when the process
				// stopped: it reaches Redis late, whatever its deadline.
				return context.WithoutCancel(ctx)
			}
		}
		AddHook(rdb, hook)
	}
	log := workerLog(cfg)
	defs, err := Definitions(cfg.Tasks)
	if err != nil {
		return err
	}
	// Redis may be down when the process starts (the soak restarts it):
	// keep trying, as a deployed worker's supervisor would. A Worker
	// starts once, so each try builds a new one.
	var w *worker.Worker
	for {
		if w, err = newWorker(cfg, rdb, log, defs, say); err != nil {
			return err
		}
		if err = w.Start(ctx); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	say("ready")
	<-ctx.Done()
	return w.Shutdown(context.Background())
}

func newWorker(cfg WorkerConfig, rdb redis.UniversalClient, log *slog.Logger, defs []*task.Definition, say func(string, ...any)) (*worker.Worker, error) {
	w, err := worker.New(worker.Options{
		Redis: rdb, Namespace: cfg.Namespace, Name: cfg.Name, Concurrency: cfg.Concurrency,
		LeaseDuration: cfg.Lease, ShutdownTimeout: cmp.Or(cfg.ShutdownTimeout, 500*time.Millisecond), FetchBlock: 200 * time.Millisecond,
		Logger: log, Schedules: cfg.Schedules, KeepRedisLogger: !cfg.LogJSON,
	})
	if err != nil {
		return nil, err
	}
	for _, d := range defs {
		err := w.HandleJSON(d, func(wctx worker.Context, raw json.RawMessage) (json.RawMessage, error) {
			var in Input
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, worker.NonRetryable(err)
			}
			if cfg.PrintStarts {
				say("started %s %d", wctx.RunID(), wctx.Attempt())
			}
			o, err := Handle(wctx, cfg.Name, in)
			if err != nil {
				return nil, err
			}
			return json.Marshal(o)
		})
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// stopSelf stops the whole process with SIGSTOP before the calling
// goroutine takes another step: the signal is sent to the calling thread
// itself, so that thread stops on its way out of the system call (a signal
// sent to the process may be taken by another thread while this one runs
// on for a moment).
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), syscall.SIGSTOP)
}
