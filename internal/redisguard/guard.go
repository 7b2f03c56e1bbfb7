package redisguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	// IntervalDefault is how often a Guard reads the policy again.
	IntervalDefault = 30 * time.Second
	// TimeoutDefault bounds one check.
	TimeoutDefault = 5 * time.Second
	// retryMax bounds the wait before the next check while Redis cannot be
	// reached (it doubles from retryMin), when Interval is longer.
	retryMin = 500 * time.Millisecond
	retryMax = 8 * time.Second
)

// Options configure a Guard. Zero values mean the defaults.
type Options struct {
	// AllowEvicting accepts a maxmemory-policy that may evict keys, or one
	// that cannot be read: Start logs a warning instead of refusing it, and
	// the accepted-risk metric is set for good.
	AllowEvicting bool
	// Interval is how often the policy is read again (default 30s); a
	// negative Interval reads it only at Start.
	Interval time.Duration
	// Timeout bounds one check (default 5s).
	Timeout time.Duration
	// Component names who runs the guard in its logs ("client", "worker").
	Component string
	Logger    *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Interval == 0 {
		o.Interval = IntervalDefault
	}
	if o.Timeout <= 0 {
		o.Timeout = TimeoutDefault
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Status is what the checks of a Guard found.
type Status struct {
	// Checked is when every master last answered a check; zero until one
	// did.
	Checked time.Time
	// Nodes are the masters as that check read them.
	Nodes []Node
	// Unsafe is why that check found Redis unsafe for taskq, accepted or
	// not: an *EvictingPolicyError or a *PolicyUnknownError.
	Unsafe error
	// Accepted is set once AllowEvicting accepted an unsafe Redis, and
	// stays set.
	Accepted bool
	// ReachErr is why the latest check could not read every master, if
	// it could not.
	ReachErr error
	// Misused is a *ClusterNodeError: a client of one server pointed at a
	// node of a Redis Cluster. AllowEvicting does not accept it.
	Misused error
}

// Err is why Redis is not ready for taskq as the last check found it: the
// unsafe policy, unless it was accepted. It says nothing of reachability.
func (s Status) Err() error {
	if s.Misused != nil {
		return s.Misused
	}
	if s.Unsafe != nil && !s.Accepted {
		return s.Unsafe
	}
	return nil
}

// Guard reads the maxmemory-policy and the memory of every Redis master at
// Start and every Interval after, and keeps what it found for readiness
// (Err), metrics (Collector) and logs: a policy that turns unsafe at run
// time is logged as an error, and Err reports it until it is safe again.
type Guard struct {
	rdb  redis.UniversalClient
	opts Options
	log  *slog.Logger

	// checking lets one check run at a time, so that each logs what
	// changed since the one before it.
	checking sync.Mutex
	mu       sync.Mutex
	st       Status
	cancel   context.CancelFunc // ends the loop
	done     chan struct{}      // closed when the loop has ended
	closed   bool

	// decided is set by the first check Redis answered; refused holds
	// what it found wrong, if anything (see gate).
	decided atomic.Bool
	refused atomic.Pointer[error]
	stopped atomic.Bool
}

// New returns a Guard of rdb. It does nothing until Start.
func New(rdb redis.UniversalClient, opts Options) *Guard {
	opts = opts.withDefaults()
	log := opts.Logger
	if opts.Component != "" {
		log = log.With("component", opts.Component)
	}
	return &Guard{rdb: rdb, opts: opts, log: log}
}

// Start checks Redis once and, unless Interval is negative, keeps checking
// it in the background until Stop. It returns the *EvictingPolicyError or
// *PolicyUnknownError of a Redis that may evict keys, unless AllowEvicting
// accepts it (with a warning); nothing keeps running then. A Redis that
// cannot be reached is no error here (the caller's own calls report it):
// it is checked again soon, and refused then if it turns out unsafe.
//
// When Redis cannot be reached at Start, the calls made through rdb are
// gated until a check is answered (see gate): each runs the check first,
// and they all fail with its error if it finds Redis unsafe, as Start
// would have. A Redis checked at Start is never gated.
func (g *Guard) Start(ctx context.Context) error {
	st := g.check(ctx, true)
	if err := st.Err(); err != nil {
		return err
	}
	if !g.decided.Load() {
		g.rdb.AddHook(gateHook{g})
	}
	if g.opts.Interval < 0 {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.cancel != nil {
		return nil
	}
	lctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan struct{})
	go g.loop(lctx, g.done)
	return nil
}

// Stop ends the background checks. It is safe to call twice, or without
// Start.
func (g *Guard) Stop() {
	g.stopped.Store(true)
	g.mu.Lock()
	cancel, done := g.cancel, g.done
	g.cancel, g.closed = nil, true
	g.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// loop checks every Interval until ctx ends, and sooner while Redis cannot
// be reached: until a check succeeds, what it holds is unknown.
func (g *Guard) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	wait, retry := g.opts.Interval, retryMin
	if g.Status().ReachErr != nil || g.Status().Checked.IsZero() {
		wait = min(retry, g.opts.Interval)
	}
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = g.opts.Interval
		if st := g.check(ctx, false); st.ReachErr != nil {
			retry = min(retry*2, retryMax)
			wait = min(retry, g.opts.Interval)
		} else {
			retry = retryMin
		}
	}
}

// Status returns what the checks found so far.
func (g *Guard) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.st
	st.Nodes = append([]Node(nil), st.Nodes...)
	return st
}

// Err is Status().Err(): why Redis is unsafe for taskq, nil while it is
// safe or the risk is accepted.
func (g *Guard) Err() error { return g.Status().Err() }

// Check reads every master now, records what it found, logs what changed
// and returns the new status.
func (g *Guard) Check(ctx context.Context) Status { return g.check(ctx, false) }

// check is Check; atStart says Start called it, and reports an unsafe
// Redis to its caller rather than in the log.
func (g *Guard) check(ctx context.Context, atStart bool) Status {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	ctx = context.WithValue(ctx, checkKey{}, true) // not gated
	nodes, err := ReadAll(ctx, g.rdb)
	var unknown *PolicyUnknownError
	if errors.As(err, &unknown) {
		err = nil // answered: unsafe, as below
	}
	var misused error
	if err == nil {
		if cerr := CheckNotClusterNode(ctx, g.rdb); cerr != nil {
			var cn *ClusterNodeError
			if errors.As(cerr, &cn) {
				misused = cn
			} else {
				err = cerr
			}
		}
	}

	// What changed is logged before the status says so: a caller that
	// sees Redis turn unsafe (Err, readiness) finds the reason logged.
	g.checking.Lock()
	defer g.checking.Unlock()
	g.mu.Lock()
	prev := g.st
	g.mu.Unlock()
	st := prev
	st.ReachErr = err
	if err == nil {
		st.Checked, st.Nodes, st.Misused = time.Now(), nodes, misused
		st.Unsafe = Verdict(nodes)
		if unknown != nil {
			st.Unsafe = unknown
		}
		if st.Unsafe != nil && g.opts.AllowEvicting {
			st.Accepted = true
		}
	}

	switch {
	case err != nil:
		g.log.Debug("taskq: cannot read Redis's maxmemory-policy now", "err", err)
	case st.Unsafe != nil && (prev.Unsafe == nil || prev.Unsafe.Error() != st.Unsafe.Error()):
		switch {
		case g.opts.AllowEvicting:
			g.log.Warn("taskq: Redis may evict taskq's keys; running anyway, as AllowEvictingRedis accepts the risk "+
				"(taskq_redis_eviction_risk_accepted is set): duplicates may run again and runs may vanish",
				unsafeAttrs(st.Unsafe)...)
		case !atStart:
			g.log.Error("taskq: Redis may evict taskq's keys; not ready until its maxmemory-policy is noeviction "+
				"(taskq_redis_eviction_policy_unsafe is set)", "err", st.Unsafe)
		}
	case st.Unsafe == nil && prev.Unsafe != nil:
		g.log.Info("taskq: Redis's maxmemory-policy is noeviction again", "nodes", fmt.Sprint(policies(nodes)))
	}
	g.mu.Lock()
	g.st = st
	g.mu.Unlock()
	if err == nil && !g.decided.Load() {
		if e := st.Err(); e != nil {
			g.refused.Store(&e)
		}
		g.decided.Store(true)
	}
	return g.Status()
}

// checkKey marks the context of a check's own calls, which gate lets
// through.
type checkKey struct{}

// gate is what a call made through a Redis not checked at Start waits
// for: until a check is answered, each call runs one first (they take
// turns); it returns the check's verdict, Status.Err, when the check finds
// Redis unsafe, and nil when it is safe or cannot be reached (the call
// then fails on its own). The verdict of the first answered check stays,
// as Start's would have: a policy changed later is logged and reported by
// Err, not refused. A stopped guard gates nothing.
func (g *Guard) gate(ctx context.Context) error {
	if g.decided.Load() {
		if e := g.refused.Load(); e != nil && !g.stopped.Load() {
			return *e
		}
		return nil
	}
	if g.stopped.Load() || ctx.Value(checkKey{}) != nil {
		return nil
	}
	g.check(ctx, true)
	if e := g.refused.Load(); e != nil {
		return *e
	}
	return nil
}

// gateHook puts gate before every call of the client it is added to.
type gateHook struct{ g *Guard }

func (h gateHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h gateHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := h.g.gate(ctx); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h gateHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if err := h.g.gate(ctx); err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

// unsafeAttrs are the log attributes of why Redis is unsafe.
func unsafeAttrs(err error) []any {
	var ep *EvictingPolicyError
	if errors.As(err, &ep) {
		return []any{"redis", ep.Addr, "maxmemory_policy", ep.Policy}
	}
	return []any{"err", err}
}

func policies(nodes []Node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.Addr + "=" + n.Policy
	}
	return out
}
