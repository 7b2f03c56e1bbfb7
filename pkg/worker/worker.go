package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
	"github.com/taskq/taskq/internal/redislog"
	"github.com/taskq/taskq/internal/runstats"
	"github.com/taskq/taskq/pkg/task"
)

// Defaults of Options.
const (
	ConcurrencyDefault     = 10
	LeaseDurationDefault   = 30 * time.Second
	LeaseDurationMin       = 100 * time.Millisecond
	ShutdownTimeoutDefault = 10 * time.Second
	FetchBlockDefault      = time.Second
	StartDelayDefault      = 20 * time.Millisecond
	RetentionDefault       = 24 * time.Hour
	// OperationTimeoutDefault is the client's default too.
	OperationTimeoutDefault = 5 * time.Second
)

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options configure a Worker. Zero values mean the documented defaults.
type Options struct {
	// Redis is an existing client; the Worker does not close it. Its own
	// settings decide whether a call ends at its deadline: go-redis heeds
	// a call's deadline on the socket only with ContextTimeoutEnabled set
	// (see RedisURL).
	Redis redis.UniversalClient
	// RedisURL is dialled when Redis is nil (default TASKQ_REDIS_URL, then
	// redis://127.0.0.1:6379/0). The client dialled from it heeds each
	// call's deadline, and its dial, read and write timeouts are at most
	// OperationTimeout, as a client's are.
	RedisURL string
	// Namespace scopes keys, runs and tasks (default "default"): 1 to 64
	// characters of A-Z a-z 0-9 _ . : - (else New fails with an
	// *InvalidNamespaceError).
	Namespace string
	// Partitions is the namespace's partition count: Start fails with an
	// error matching client.ErrPartitionsMismatch when the namespace recorded another when it
	// was first used. 0 (the default) adopts the recorded count, or, for a
	// namespace never used, records 1 on a single Redis and 16 on a Redis
	// Cluster. The worker reads every partition (docs/scaling.md).
	Partitions int
	// Name identifies this worker as a consumer (default host-pid-random).
	Name string
	// Version is the version of the program, shown in the list of workers
	// (default: the main module's version from the build information).
	Version string
	// Concurrency bounds the handlers running at once (default 10). A
	// handler that returns frees its slot while its outcome is written to
	// Redis, and up to Concurrency outcomes may be waiting to be written:
	// the run stays this worker's, its lease renewed, until Redis holds
	// its outcome.
	Concurrency int
	// LeaseDuration is how long a run stays with this worker without a
	// heartbeat before another worker may take it over (default 30s).
	LeaseDuration time.Duration
	// HeartbeatInterval renews leases (default LeaseDuration/3).
	HeartbeatInterval time.Duration
	// ShutdownTimeout is how long Shutdown lets running handlers finish
	// before cancelling them and giving their runs back (default 10s).
	ShutdownTimeout time.Duration
	// FetchBlock is how long one read of the streams blocks (default 1s).
	FetchBlock time.Duration
	// StartDelay is how long a new delivery's handler runs before its
	// attempt is recorded as begun (the run then shows running, and its
	// lease is renewed from then on). A handler that returns sooner has its
	// attempt begun and its outcome recorded in one write, which saves a
	// round trip and about a quarter of what Redis spends on the run. Until
	// then the run shows queued, and a cancel still reaches the handler.
	// Default 20ms; a negative value begins every attempt before its
	// handler runs. StartDelay plus HeartbeatInterval must be below
	// LeaseDuration.
	StartDelay time.Duration
	// OperationTimeout bounds each call to Redis the worker makes with no
	// deadline of its own: queueing due retries, sweeping, checking the
	// task registry, giving a run back on shutdown (default 5s).
	OperationTimeout time.Duration
	// StatsInterval is how often the worker adds the run statistics it
	// counted in memory (queue waits and run times, for the dashboard's
	// charts) to Redis, in one pipeline (default 2s); it adds the rest
	// when it shuts down. The charts lag by up to this much, and a worker
	// that crashes loses what it had not added.
	StatsInterval time.Duration
	// Retention is how long the janitor keeps index entries (default 24h).
	Retention time.Duration
	// SweepInterval is how often the janitor sweeps the runs index of
	// entries whose records expired (default 1m).
	SweepInterval time.Duration
	// RefuseDefinitionConflict makes Start fail with a
	// *DefinitionConflictError, leaving the registered definition as it
	// is, when the registered definition of a task differs from this
	// worker's. By default (false) Start registers this worker's and logs a
	// warning naming both versions: the usual case in a rolling deploy.
	RefuseDefinitionConflict bool
	// AllowEvictingRedis accepts a Redis whose maxmemory-policy may evict
	// keys (anything but noeviction), or does not tell its policy, with a
	// warning and the taskq_redis_eviction_risk_accepted metric, where
	// Start would refuse it (see docs/operations.md).
	AllowEvictingRedis bool
	// RedisCheckInterval is how often the maxmemory-policy is read again
	// after Start (default 30s; negative: only at Start). A policy turned
	// unsafe is logged as an error and reported by RedisErr.
	RedisCheckInterval time.Duration
	// Metrics, when set, gets the worker's metrics: of its runs
	// (taskq_worker_*: started, succeeded, failed and retried by task,
	// handler durations, in flight, lease renewals, redeliveries) and
	// gauges of Redis: its maxmemory-policy, used_memory and maxmemory
	// (taskq_redis_*). Handler serves them whether or not it is set.
	Metrics prometheus.Registerer
	// Middleware wraps every handler, the first outermost: for tracing
	// or other instrumentation (see docs/operations.md#tracing).
	Middleware []Middleware
	// HTTPAddr, when set, serves Handler (/metrics, /healthz, /readyz) on
	// this address from Start until Shutdown; Start fails if it cannot
	// listen. Leave it empty to mount Handler yourself.
	HTTPAddr string
	// Logger gets the worker's logs, and from Start to Shutdown go-redis's
	// own lines (a failed dial) as warnings with component=go-redis,
	// unless KeepRedisLogger (default slog.Default()).
	Logger *slog.Logger
	// KeepRedisLogger leaves go-redis's process-wide logger
	// (redis.SetLogger) as it is, for the rest of the process: set it
	// when the program installs its own. By default Start routes
	// go-redis's lines into Logger (see docs/operations.md#logs).
	KeepRedisLogger bool
	// Clock tells the worker the time (time.Now when nil).
	Clock task.Clock
	// Schedules are cron schedules the worker registers when it starts
	// (client.Schedules.Put: one already registered gets this definition
	// and keeps its cursor and paused state). See docs/cron.md.
	Schedules []task.Schedule
	// NoScheduler turns off the worker's scheduler, which by default fires
	// the ticks of the namespace's cron schedules. Any number of workers
	// may run one: each tick fires once.
	NoScheduler bool
	// ScheduleRefresh is how often the scheduler reads the schedules again
	// when no tick is due sooner (default ScheduleRefreshDefault).
	ScheduleRefresh time.Duration
	// PauseRefresh is how often the worker reads which tasks are paused
	// (client.Inspector.SetTaskPaused), one small read of Redis each time
	// (default PauseRefreshDefault): a pause takes effect within about
	// this long, plus a read of the streams already under way (FetchBlock)
	// whose deliveries are then held back rather than started.
	PauseRefresh time.Duration
}

func (o Options) withDefaults() Options {
	if o.RedisURL == "" {
		o.RedisURL = os.Getenv("TASKQ_REDIS_URL")
	}
	if o.RedisURL == "" {
		o.RedisURL = "redis://127.0.0.1:6379/0"
	}
	if o.Namespace == "" {
		o.Namespace = engine.NamespaceDefault
	}
	if o.Name == "" {
		host, _ := os.Hostname()
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		o.Name = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
	}
	if o.Version == "" {
		o.Version = buildVersion()
	}
	if o.Concurrency == 0 {
		o.Concurrency = ConcurrencyDefault
	}
	if o.LeaseDuration == 0 {
		o.LeaseDuration = LeaseDurationDefault
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = o.LeaseDuration / 3
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = ShutdownTimeoutDefault
	}
	if o.FetchBlock == 0 {
		o.FetchBlock = FetchBlockDefault
	}
	if o.StartDelay == 0 {
		o.StartDelay = StartDelayDefault
	}
	if o.Retention == 0 {
		o.Retention = RetentionDefault
	}
	if o.StatsInterval == 0 {
		o.StatsInterval = runstats.DefaultInterval
	}
	if o.OperationTimeout == 0 {
		o.OperationTimeout = OperationTimeoutDefault
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = time.Minute
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.ScheduleRefresh == 0 {
		o.ScheduleRefresh = ScheduleRefreshDefault
	}
	if o.PauseRefresh == 0 {
		o.PauseRefresh = PauseRefreshDefault
	}
	return o
}

func (o Options) validate() error {
	if err := engine.ValidateNamespace(o.Namespace); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if err := engine.CheckPartitions(o.Partitions); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	switch {
	case o.Concurrency < 1:
		return fmt.Errorf("worker: Concurrency %d must be at least 1", o.Concurrency)
	case o.LeaseDuration < LeaseDurationMin:
		return fmt.Errorf("worker: LeaseDuration %s is below %s", o.LeaseDuration, LeaseDurationMin)
	case o.HeartbeatInterval <= 0 || o.HeartbeatInterval >= o.LeaseDuration:
		return fmt.Errorf("worker: HeartbeatInterval %s must be above 0 and below LeaseDuration %s", o.HeartbeatInterval, o.LeaseDuration)
	case o.ShutdownTimeout < 0:
		return errors.New("worker: ShutdownTimeout must not be negative")
	case o.OperationTimeout < 0:
		return errors.New("worker: OperationTimeout must not be negative")
	case o.StatsInterval < 0:
		return fmt.Errorf("worker: StatsInterval %s must not be negative", o.StatsInterval)
	case o.StartDelay > 0 && o.StartDelay+o.HeartbeatInterval >= o.LeaseDuration:
		// A delivery's lease counts from its read; the first heartbeat
		// after its attempt is begun must renew it in time.
		return fmt.Errorf("worker: StartDelay %s plus HeartbeatInterval %s must be below LeaseDuration %s",
			o.StartDelay, o.HeartbeatInterval, o.LeaseDuration)
	case o.ScheduleRefresh < 0:
		return errors.New("worker: ScheduleRefresh must not be negative")
	case o.PauseRefresh < 0:
		return fmt.Errorf("worker: PauseRefresh %s must not be negative", o.PauseRefresh)
	case len(o.Schedules) > 0 && o.NoScheduler:
		return errors.New("worker: Schedules are registered by the scheduler, which NoScheduler turns off")
	}
	return validateSchedules(o.Schedules)
}

type handlerFunc func(ctx Context, input []byte) ([]byte, error)

type registration struct {
	def     *task.Definition
	handler handlerFunc
}

// Worker runs the handlers of the tasks registered on it. Start it with
// Run (which also handles SIGINT/SIGTERM) or Start and Shutdown.
type Worker struct {
	opts  Options
	store engine.Engine
	// conn is the connection under store, closed at shutdown.
	conn *connect.Conn
	log  *slog.Logger

	mu      sync.Mutex
	tasks   map[string]*registration
	names   []string
	started bool
	// shutDown is set by Shutdown; a Start after it fails.
	shutDown bool
	// life holds the worker's duties, built at Start: lifecycle.go says
	// in which order they start and stop. Nil until Start.
	life *lifecycle
	// guard watches Redis's maxmemory-policy and memory from Start on.
	guard *redisguard.Guard
	// probes serves Handler on Options.HTTPAddr; nil without one.
	probes *http.Server
	// metrics count the worker's runs; registry holds them and the
	// guard's, for Handler.
	metrics  *workerMetrics
	registry *prometheus.Registry
	// unroute stops go-redis's lines going to the worker's logger; set
	// by Start.
	unroute func()
}

// New creates a Worker. Register handlers with Handle, then Run it.
func New(opts Options) (*Worker, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	conn, err := connect.Open(connect.Options{Redis: opts.Redis, URL: opts.RedisURL,
		OperationTimeout: opts.OperationTimeout, Namespace: opts.Namespace, Partitions: opts.Partitions})
	if err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	rdb := conn.Redis
	w := &Worker{
		opts: opts, store: conn.Engine, conn: conn,
		log:   opts.Logger.With("worker", opts.Name),
		tasks: map[string]*registration{},
	}
	w.guard = redisguard.New(rdb, redisguard.Options{AllowEvicting: opts.AllowEvictingRedis,
		Interval: opts.RedisCheckInterval, Component: "worker", Logger: w.log})
	w.metrics, w.registry = newWorkerMetrics(), prometheus.NewRegistry()
	collectors := append(w.metrics.collectors(), w.guard.Collector(), newQueueCollector(w))
	for _, reg := range []prometheus.Registerer{w.registry, opts.Metrics} {
		if reg == nil {
			continue
		}
		for _, c := range collectors {
			if err := reg.Register(c); err != nil {
				_ = conn.Close()
				return nil, fmt.Errorf("worker: register metrics: %w", err)
			}
		}
	}
	return w, nil
}

// Name is the consumer name this worker reads streams as.
func (w *Worker) Name() string { return w.opts.Name }

// Handle registers fn as the handler of t. Call it before Start.
func Handle[I, O any](w *Worker, t *task.Task[I, O], fn func(ctx Context, input I) (O, error)) error {
	return w.register(t.Definition(), func(ctx Context, raw []byte) ([]byte, error) {
		var in I
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, NonRetryable(fmt.Errorf("worker: decode input: %w", err))
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		return json.Marshal(out)
	})
}

// HandleJSON registers an untyped handler that receives and returns JSON.
func (w *Worker) HandleJSON(def *task.Definition, fn func(ctx Context, input json.RawMessage) (json.RawMessage, error)) error {
	return w.register(def, func(ctx Context, raw []byte) ([]byte, error) { return fn(ctx, raw) })
}

func (w *Worker) register(def *task.Definition, h handlerFunc) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return fmt.Errorf("worker: register task %q: worker already started", def.Name)
	}
	if _, dup := w.tasks[def.Name]; dup {
		return fmt.Errorf("worker: task %q registered twice", def.Name)
	}
	w.tasks[def.Name] = &registration{def: def, handler: chain(w.opts.Middleware, h)}
	w.names = append(w.names, def.Name)
	return nil
}

// definitions returns the definitions of the registered tasks.
func (w *Worker) definitions() []*task.Definition {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*task.Definition, 0, len(w.names))
	for _, n := range w.names {
		out = append(out, w.tasks[n].def)
	}
	return out
}

// Start creates the consumer groups, registers the task definitions and
// starts the worker's duties. It returns once the worker is consuming and
// hears cancels: Redis has confirmed its subscription to cancel notices, so
// a run cancelled from then on has its handler's context cancelled.
func (w *Worker) Start(ctx context.Context) error {
	w.mu.Lock()
	switch {
	case w.started:
		w.mu.Unlock()
		return errors.New("worker: already started")
	case len(w.names) == 0:
		w.mu.Unlock()
		return errors.New("worker: no task registered")
	case w.shutDown:
		w.mu.Unlock()
		return errors.New("worker: shut down before it started")
	}
	w.started = true
	unroute := routeRedisLog(w.opts.Logger, w.opts.KeepRedisLogger)
	w.unroute = unroute
	w.mu.Unlock()
	if err := w.start(ctx); err != nil {
		unroute()
		return err
	}
	return nil
}

// start is Start once the worker is marked started.
func (w *Worker) start(ctx context.Context) error {
	// A Redis that may evict keys is refused before anything is written.
	if err := w.guard.Start(ctx); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	// The namespace's partitions: every duty covers each of them.
	pctx, cancel := context.WithTimeout(ctx, w.opts.OperationTimeout)
	parts, err := w.store.PartitionCount(pctx)
	var cancels []string
	if err == nil {
		cancels, err = w.store.CancelTopics(pctx)
	}
	cancel()
	if err != nil {
		w.guard.Stop()
		return fmt.Errorf("worker: %w", err)
	}
	w.mu.Lock()
	if w.shutDown { // Shutdown ran while the guard read Redis
		w.mu.Unlock()
		w.guard.Stop()
		return errors.New("worker: shut down before it started")
	}
	life, err := wire(w, parts, cancels)
	w.life = life
	w.mu.Unlock()
	if err == nil {
		err = life.start(ctx)
	}
	if err == nil && w.opts.HTTPAddr != "" {
		if err = w.serveProbes(); err != nil {
			life.stop(context.Background(), 0)
		}
	}
	if err != nil {
		w.guard.Stop()
		return err
	}
	w.log.Info("taskq worker started", "tasks", w.names, "concurrency", w.opts.Concurrency, "namespace", w.opts.Namespace,
		"partitions", parts)
	return nil
}

// Shutdown stops taking runs, lets running handlers finish, then cancels
// the rest with ErrShutdown and gives their runs back to the queue. It
// returns within ShutdownTimeout (or when ctx ends, if sooner): handlers
// get all of it but a reserve (a quarter, at most OperationTimeout) kept
// for giving runs back and writing the last outcomes, and every call to
// Redis made meanwhile is bounded by what is left. Runs it could neither
// give back nor record (Redis did not answer, a handler ignored its
// cancellation) are named in a *ShutdownError: they are delivered again
// once their leases lapse. The order matters: leases are renewed until
// the last handler has returned.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	w.shutDown = true
	life := w.life
	w.mu.Unlock()
	timeout := w.opts.ShutdownTimeout
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var err error
	if life != nil {
		w.log.Info(fmt.Sprintf("taskq: shutting down, %d runs in flight", life.processor.active.len()),
			"runs", life.processor.active.len(), "timeout", timeout)
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			life.stop(sctx, timeout-handBackReserve(timeout, w.opts.OperationTimeout))
		}()
		select {
		case <-stopped:
		case <-sctx.Done():
			// What still waits for Redis is given up: the runs it holds
			// are listed below, left to their leases.
		}
		err = life.processor.lost.error(life.processor.active, w.opts.LeaseDuration)
	}
	w.guard.Stop()
	if w.probes != nil {
		// Probes answer until the worker has stopped, so /readyz says not
		// ready during the drain rather than refusing connections.
		pctx, cancel := context.WithTimeout(context.Background(), min(w.opts.OperationTimeout, max(time.Until(deadlineOf(sctx)), 0)))
		_ = w.probes.Shutdown(pctx)
		cancel()
	}
	if err != nil {
		w.log.Warn("taskq: worker stopped, leaving runs to their leases", "err", err)
	} else {
		w.log.Info("taskq worker stopped")
	}
	w.mu.Lock()
	unroute := w.unroute
	w.mu.Unlock()
	if unroute != nil {
		defer unroute()
	}
	if cerr := w.conn.Close(); cerr != nil {
		err = errors.Join(err, cerr)
	}
	return err
}

// deadlineOf is ctx's deadline, or now when it has none.
func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now()
}

// Run starts the worker and blocks until ctx ends or the process gets
// SIGINT or SIGTERM, then shuts down gracefully.
func (w *Worker) Run(ctx context.Context) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := w.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return w.Shutdown(context.Background())
}

// routeRedisLog sends go-redis's lines to log (see internal/redislog),
// unless keep says the program manages go-redis's logger itself. The
// function returned stops it.
func routeRedisLog(log *slog.Logger, keep bool) func() {
	if keep {
		redislog.Leave()
		return func() {}
	}
	return redislog.Route(log)
}

// buildVersion is the main module's version, "(devel)" for a build from
// a work tree, or "" when the binary has no build information.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return ""
}

// sleep waits d or until quit; it reports false when quit fired.
func sleep(quit <-chan struct{}, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-quit:
		return false
	case <-t.C:
		return true
	}
}

// backoff doubles a retry delay after a Redis error, up to 5s.
func backoff(d time.Duration) time.Duration {
	if d == 0 {
		return 50 * time.Millisecond
	}
	if d *= 2; d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}
