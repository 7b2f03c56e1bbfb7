package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisguard"
	"github.com/taskq/taskq/internal/redislog"
	"github.com/taskq/taskq/internal/runstats"
	"github.com/taskq/taskq/internal/ticks"
	"github.com/taskq/taskq/pkg/idempotency"
	"github.com/taskq/taskq/pkg/task"
)

// Defaults and limits of Options.
const (
	RedisURLDefault         = "redis://127.0.0.1:6379/0"
	RetentionDefault        = 24 * time.Hour
	MaxInputBytesDefault    = 1 << 20
	MaxMetadataBytesDefault = 64 << 10
	MaxBatchDefault         = 1000
	OperationTimeoutDefault = 5 * time.Second
)

// RedisURLSchemes lists the schemes Options.RedisURL may have.
const RedisURLSchemes = connect.Schemes

// ErrClusterNode matches the error with which New (when Redis answers
// then, or else the first call) refuses an Options.RedisURL (redis:// or
// rediss://) or Options.Redis that points at one node of a Redis Cluster,
// which it would reach alone; its message names the redis+cluster:// URL
// to use (see docs/operations.md).
var ErrClusterNode = redisguard.ErrClusterNode

// RedisURLEnv names the environment variable read when no Redis is given.
const RedisURLEnv = "TASKQ_REDIS_URL"

// Limits and defaults of Options.Partitions: see docs/scaling.md.
const (
	// PartitionsMax is the largest partition count a namespace can have.
	PartitionsMax = engine.PartitionsMax
	// PartitionsDefault is the count a namespace first used on a single
	// Redis records when none is configured. One first used on a Redis
	// Cluster records the number of masters serving slots then, so that
	// each master has one partition (docs/scaling.md, Choosing P).
	PartitionsDefault = engine.PartitionsDefault
)

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Options configure a Client. The zero value connects to TASKQ_REDIS_URL
// (or RedisURLDefault) in namespace "default".
type Options struct {
	// Redis is an existing client to use; the Client does not close it. It
	// adds a hook to it that notes failed connection attempts, to name them
	// in an *UnavailableError. Its own settings decide whether a call ends
	// at OperationTimeout: go-redis heeds a call's deadline on the socket
	// only with ContextTimeoutEnabled set (see RedisURL).
	Redis redis.UniversalClient
	// RedisURL (see RedisURLSchemes) is used when Redis is nil: a
	// redis+cluster:// URL for a Redis Cluster, whose nodes New refuses
	// under redis:// (ErrClusterNode). The
	// client dialled from it heeds each call's deadline, and its dial, read
	// and write timeouts are at most OperationTimeout.
	RedisURL string
	// Namespace scopes keys, runs and tasks (default "default"): 1 to 64
	// characters of A-Z a-z 0-9 _ . : - (else New fails with an
	// an error matching ErrInvalidNamespace).
	Namespace string
	// Partitions is the namespace's partition count. 0 (the default)
	// adopts the count the namespace recorded when it was first used, or,
	// for a namespace never used, records 1 on a single Redis and 16 on a
	// Redis Cluster (see docs/scaling.md). A count set here must be the
	// recorded one: New fails with ErrPartitionsMismatch otherwise (or
	// the first call does, when Redis cannot be reached at New).
	Partitions int
	// Retention is how long a run record is kept after the run ends.
	Retention time.Duration
	// MaxInputBytes and MaxMetadataBytes bound a trigger's JSON.
	MaxInputBytes    int
	MaxMetadataBytes int
	// MaxBatch bounds RunMany.
	MaxBatch int
	// MaxInputDepth bounds how deep input and metadata JSON may nest
	// (default 64 levels), for every task, deduplicated or not.
	MaxInputDepth int
	// MaxSignals bounds the signals one run may hold (default 10,000).
	MaxSignals int
	// MaxScheduleAhead bounds how far ahead RunAt and RunIn may schedule
	// a run (default MaxScheduleAheadDefault, 366 days).
	MaxScheduleAhead time.Duration
	// OperationTimeout bounds every call to Redis that has no earlier
	// deadline of its own (default 5s), so an unreachable or stopped Redis
	// gives a prompt *UnavailableError: a call returns within about this
	// long, however many round trips it makes.
	OperationTimeout time.Duration
	// StatsInterval is how often the client adds the run statistics it
	// counted in memory (the triggers that met a held key, for the
	// dashboard's duplicates chart) to Redis, in one pipeline (default
	// 2s); Close adds the rest. The chart lags by up to this much, and a
	// process that crashes loses what it had not added.
	StatsInterval time.Duration
	// DisableTriggerBatching sends each trigger as its own script call.
	// By default, triggers made concurrently by many goroutines are
	// coalesced into one script call (see batcher.go); nothing waits to fill a
	// batch, so a lone trigger is sent at once.
	DisableTriggerBatching bool
	// AllowEvictingRedis accepts a Redis whose maxmemory-policy may evict
	// keys (anything but noeviction), or does not tell its policy, with a
	// warning and the taskq_redis_eviction_risk_accepted metric, where New
	// would refuse it: evicted keys let duplicates run again and lose runs
	// (see docs/operations.md).
	AllowEvictingRedis bool
	// RedisCheckInterval is how often the maxmemory-policy is read again
	// after New (default 30s; negative: only at New). A policy turned
	// unsafe is logged as an error and reported by the readiness of taskq serve.
	RedisCheckInterval time.Duration
	// TriggerMiddleware wraps every trigger, the first outermost: for
	// tracing or metrics (see TriggerMiddleware).
	TriggerMiddleware []TriggerMiddleware
	// Durability is the acknowledgement every trigger waits for unless
	// its task or the trigger itself says otherwise (see WithDurability
	// and docs/guarantees.md). Zero: none, a trigger returns once the
	// master ran it. Its Timeout must be below OperationTimeout (and, for
	// a Redis client passed in, below its ReadTimeout); a LocalFsync is
	// checked against the server's version at New.
	Durability task.Durability
	// SkipDurability makes every trigger return once the master ran it,
	// whatever the client, the task or the trigger ask for: for an
	// embedded Redis that has no replicas (taskqtest, taskq dev), where
	// every durable trigger would fall short.
	SkipDurability bool
	// Metrics, when set, gets the client's metrics of durable triggers
	// (taskq_durable_triggers_total, taskq_durability_shortfalls_total).
	Metrics prometheus.Registerer
	// Logger gets the client's logs, and go-redis's own lines (a failed
	// dial) as warnings with component=go-redis, unless KeepRedisLogger
	// (default slog.Default()).
	Logger *slog.Logger
	// KeepRedisLogger leaves go-redis's process-wide logger
	// (redis.SetLogger) as it is, for the rest of the process: set it
	// when the program installs its own. By default New routes go-redis's
	// lines into Logger (see docs/operations.md#logs).
	KeepRedisLogger bool
	// Clock tells the client the time (time.Now when nil).
	Clock task.Clock
}

func (o Options) withDefaults() Options {
	if o.RedisURL == "" {
		o.RedisURL = os.Getenv(RedisURLEnv)
	}
	if o.RedisURL == "" {
		o.RedisURL = RedisURLDefault
	}
	if o.Namespace == "" {
		o.Namespace = engine.NamespaceDefault
	}
	if o.Retention == 0 {
		o.Retention = RetentionDefault
	}
	if o.MaxInputBytes == 0 {
		o.MaxInputBytes = MaxInputBytesDefault
	}
	if o.MaxMetadataBytes == 0 {
		o.MaxMetadataBytes = MaxMetadataBytesDefault
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = MaxBatchDefault
	}
	if o.MaxInputDepth == 0 {
		o.MaxInputDepth = idempotency.MaxInputDepthDefault
	}
	if o.MaxSignals == 0 {
		o.MaxSignals = engine.MaxSignalsDefault
	}
	if o.OperationTimeout == 0 {
		o.OperationTimeout = OperationTimeoutDefault
	}
	if o.StatsInterval == 0 {
		o.StatsInterval = runstats.DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	return o
}

func (o Options) validate() error {
	if err := engine.ValidateNamespace(o.Namespace); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	if err := engine.CheckPartitions(o.Partitions); err != nil {
		return fmt.Errorf("client: %w", err)
	}
	switch {
	case o.Retention < time.Second:
		return fmt.Errorf("client: Retention %s is below 1s", o.Retention)
	case o.MaxInputBytes < 0, o.MaxMetadataBytes < 0, o.MaxBatch < 0, o.MaxSignals < 0, o.MaxInputDepth < 0:
		return errors.New("client: limits must not be negative")
	case o.OperationTimeout < 0:
		return errors.New("client: OperationTimeout must not be negative")
	case o.StatsInterval < 0:
		return fmt.Errorf("client: StatsInterval %s must not be negative", o.StatsInterval)
	}
	if err := checkDurability(o.Durability, o.OperationTimeout); err != nil {
		return fmt.Errorf("client: Options: %w", err)
	}
	return nil
}

// Client triggers runs and follows them. It is safe for concurrent use.
type Client struct {
	opts  Options
	store engine.Engine
	// conn is the connection under store, closed with the client.
	conn   *connect.Conn
	waiter *waiter
	defs   definitions
	// triggers batches concurrent triggers; nil when disabled.
	triggers *triggerBatcher
	// dials remembers why connecting to Redis last failed.
	dials *dialRecorder
	// guard watches Redis's maxmemory-policy and memory.
	guard *redisguard.Guard
	// metrics count durable triggers.
	metrics *clientMetrics
	// unroute stops go-redis's lines going to this client's logger.
	unroute func()
	// stats counts the duplicates the client's triggers meet, flushed by
	// a goroutine until Close (statsQuit, statsDone).
	stats     *runstats.Recorder
	statsQuit chan struct{}
	statsDone chan struct{}
	closeOnce sync.Once
	// linkHolder carries what the client shares with taskq's own packages
	// (see internal/clientlink); it adds nothing users can call.
	linkHolder
}

// linkHolder names clientlink.Holder so that the embedded field is
// unexported.
type linkHolder = clientlink.Holder

// New connects a Client. With Options.Redis nil it dials Options.RedisURL.
func New(opts Options) (c *Client, err error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	// go-redis's lines of the dials below go to opts.Logger already.
	unroute := routeRedisLog(opts.Logger, opts.KeepRedisLogger)
	defer func() {
		if err != nil {
			unroute()
		}
	}()
	conn, err := connect.Open(connect.Options{Redis: opts.Redis, URL: opts.RedisURL,
		OperationTimeout: opts.OperationTimeout, Namespace: opts.Namespace, Partitions: opts.Partitions})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	st, rdb := conn.Engine, conn.Redis
	triggers, err := newTriggerBatcher(st, opts)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	dials := &dialRecorder{}
	rdb.AddHook(dials)
	// A Redis that may evict keys is refused before anything is written.
	guard := redisguard.New(rdb, redisguard.Options{AllowEvicting: opts.AllowEvictingRedis,
		Interval: opts.RedisCheckInterval, Timeout: opts.OperationTimeout, Component: "client", Logger: opts.Logger})
	if err := guard.Start(context.Background()); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("client: %w", err)
	}
	if opts.Partitions != 0 {
		// A configured count is checked against the namespace's now; a
		// Redis that does not answer is no error here (as for the guard):
		// the first call reads the count then.
		ctx, cancel := context.WithTimeout(context.Background(), opts.OperationTimeout)
		_, err := st.PartitionCount(ctx)
		cancel()
		if errors.Is(err, ErrPartitionsMismatch) {
			guard.Stop()
			_ = conn.Close()
			return nil, fmt.Errorf("client: %w", err)
		}
	}
	// A local fsync the server cannot give is refused now, not at the
	// first trigger.
	ctx, cancel := context.WithTimeout(context.Background(), opts.OperationTimeout)
	err = st.CheckDurability(ctx, opts.Durability)
	cancel()
	metrics := newClientMetrics()
	if err == nil && opts.Metrics != nil {
		err = opts.Metrics.Register(metrics)
	}
	if err != nil {
		guard.Stop()
		_ = conn.Close()
		return nil, fmt.Errorf("client: %w", err)
	}
	c = &Client{opts: opts, store: st, conn: conn, triggers: triggers, dials: dials, guard: guard, metrics: metrics,
		unroute: unroute, stats: runstats.New(st, opts.Logger), statsQuit: make(chan struct{}), statsDone: make(chan struct{})}
	c.waiter = newWaiter(c)
	sc := c.Schedules()
	c.linkHolder = clientlink.Hold(&clientlink.Link{Engine: st, Guard: guard, Metrics: metrics, Namespace: opts.Namespace, Clock: opts.Clock,
		OperationTimeout: opts.OperationTimeout, Admission: c.admission(),
		Unavailable: func(ctx context.Context, err error) error { return c.unavailable(ctx, err) },
		FireTick: func(ctx context.Context, cs *ticks.Compiled, tick time.Time) error {
			_, err := sc.fire(ctx, cs, tick)
			return err
		},
		AdvanceSchedule: sc.advance, Spawn: c.spawn})
	go func() {
		defer close(c.statsDone)
		c.stats.Run(c.statsQuit, opts.StatsInterval, opts.OperationTimeout)
	}()
	return c, nil
}

// watch asks for the run's completion notice (see Store.WatchRun) and
// returns its status, bounded and reported like every other call.
func (c *Client) watch(ctx context.Context, runID string) (string, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	status, err := c.store.WatchRun(ctx, runID)
	return status, c.unavailable(ctx, err)
}

// doneChannel is the completion channel of run runID, in the run's
// partition.
func (c *Client) doneChannel(ctx context.Context, runID string) (string, error) {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	topic, err := c.store.DoneTopic(ctx, runID)
	if err != nil {
		return "", c.unavailable(ctx, err)
	}
	return topic, nil
}

// Close releases the Client's connections (not a Redis client passed in).
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.statsQuit) })
	<-c.statsDone // the last flush, bounded by OperationTimeout
	c.guard.Stop()
	c.unroute()
	err := c.waiter.close()
	if c.conn.Owned() {
		err = errors.Join(err, c.conn.Close())
	}
	return err
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

// Ping checks that Redis answers.
func (c *Client) Ping(ctx context.Context) error {
	ctx, cancel := c.opCtx(ctx)
	defer cancel()
	return c.unavailable(ctx, c.store.Ping(ctx))
}

// opCtx bounds a call to Redis by OperationTimeout unless ctx has an
// earlier deadline.
func (c *Client) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return boundCtx(ctx, c.opts.OperationTimeout)
}

// boundCtx bounds ctx by d unless it has an earlier deadline.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
