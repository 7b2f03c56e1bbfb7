package redisguard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
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
}

// Err is why Redis is not ready for taskq as the last check found it: the
// unsafe policy, unless it was accepted. It says nothing of reachability.
func (s Status) Err() error {
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
func (g *Guard) Start(ctx context.Context) error {
	st := g.check(ctx, true)
	if err := st.Err(); err != nil {
		return err
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
	nodes, err := ReadAll(ctx, g.rdb)
	var unknown *PolicyUnknownError
	if errors.As(err, &unknown) {
		err = nil // answered: unsafe, as below
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
		st.Checked, st.Nodes = time.Now(), nodes
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
	return g.Status()
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
