package worker

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/taskdef"
	"github.com/taskq/taskq/pkg/task"
)

// rateStore is what the rate limiter reads and writes in Redis.
type rateStore interface {
	TakeRateLimits(ctx context.Context, now time.Time, reqs []engine.RateTake) ([]engine.RateTakeResult, []error)
	ReturnRateLimits(ctx context.Context, reqs []engine.RateTake) ([]int, []error)
	DeferRuns(ctx context.Context, ds []engine.Deferral) ([]engine.DeferResult, []error)
}

// rateLimiter decides, between a delivery's read and the start of its
// attempt, whether the rate limits of its task (task.RateLimit) admit it.
// Each limit's units are taken by one script in the limit's own slot
// (ratelimit_take.lua), the limits of a task one after the other in the
// order declared, so that a run starts only when all of them admitted it.
// When a later limit refuses, the units the earlier ones gave are given
// back (ratelimit_return.lua); a worker that dies in between leaves them
// taken until they leave the window, which can only start fewer runs,
// never more. A refused run is held back (ratelimit_defer.lua): its
// delivery is dropped and the run waits, queued, in its partition's retry
// zset until the limit that refused it says enough units are free, when
// the forwarder queues it again. Its handler slot is free meanwhile.
type rateLimiter struct {
	store     rateStore
	tasks     map[string]*registration
	opTimeout time.Duration
	clock     task.Clock
	log       *slog.Logger
	metrics   *workerMetrics
}

// limited is a delivery whose task has rate limits, on its way through
// them.
type limited struct {
	d      engine.Delivery
	limits []task.RateLimit
	keys   []string
	// units and caps are what the run takes of each limit, and the limit
	// it is measured by: the limit's Units and Limit, or the values of its
	// expressions on the run's input.
	units, caps []int
	token       string
	// taken are the requests whose units were taken so far.
	taken []engine.RateTake
	// refused is the index of the limit that refused the run (-1: none
	// yet), wait what that limit said; failed says a call failed.
	refused int
	wait    time.Duration
	failed  bool
}

// admitRateLimited returns the deliveries of ds that may start now: those
// of tasks without rate limits, and those every limit of their task
// admitted. The others are held back until their limit has room (or, when
// Redis failed, stay pending until their lease lapses) on a goroutine of
// their own, so that the admitted ones start at once, and their handler
// slots are given back once that is done.
func (p *processor) admitRateLimited(ds []engine.Delivery) []engine.Delivery {
	if p.limiter == nil {
		return ds
	}
	ok, rest := p.limiter.admit(p.base, ds)
	if len(rest) > 0 {
		p.inFlight.Add(1)
		go func() {
			defer p.inFlight.Done()
			p.limiter.holdBack(p.base, rest)
			p.slots.release(len(rest))
		}()
	}
	return ok
}

// admit returns the deliveries of ds that may start now, and the others,
// for holdBack.
func (r *rateLimiter) admit(base context.Context, ds []engine.Delivery) (ok []engine.Delivery, rest []*limited) {
	if !slices.ContainsFunc(ds, r.limits) {
		// The common read: nothing to copy.
		return ds, nil
	}
	var lims []*limited
	for _, d := range ds {
		if !r.limits(d) {
			ok = append(ok, d)
			continue
		}
		lims = append(lims, r.prepare(r.tasks[d.Task].def, d))
	}
	ctx, cancel := context.WithTimeout(base, r.opTimeout)
	defer cancel()
	r.take(ctx, lims)
	for _, l := range lims {
		if l.refused < 0 && !l.failed {
			ok = append(ok, l.d)
		} else {
			rest = append(rest, l)
		}
	}
	return ok, rest
}

// limits reports whether d's task has rate limits.
func (r *rateLimiter) limits(d engine.Delivery) bool {
	reg := r.tasks[d.Task]
	return reg != nil && len(reg.def.RateLimits) > 0
}

// holdBack gives back what the runs admit refused had taken, and holds
// back those a limit refused.
func (r *rateLimiter) holdBack(base context.Context, rest []*limited) {
	ctx, cancel := context.WithTimeout(base, r.opTimeout)
	defer cancel()
	r.giveBack(ctx, rest)
	r.hold(ctx, rest)
}

// prepare evaluates the keys of def's rate limits on d's input, and their
// units and limits. A key that cannot be evaluated (the definition changed
// since the trigger, which evaluated it) falls back to the limit's units
// without a key, and units or a limit that cannot be to one unit of a
// limit of one, the strictest reading, so that the run is still limited.
func (r *rateLimiter) prepare(def *task.Definition, d engine.Delivery) *limited {
	// The token names the run, so that a limit's log says which runs took
	// its units, and is unique to this request.
	l := &limited{d: d, limits: def.RateLimits, refused: -1, token: d.RunID + "/" + strconv.FormatUint(rand.Uint64(), 36)}
	var input, meta []byte
	if d.Spec != nil {
		input, meta = d.Spec.Input, d.Spec.Meta
	}
	keys, err := taskdef.RateLimitKeys(def, input, meta)
	if err != nil {
		r.log.Warn("taskq: rate limit key failed at start; the run counts against the limit without a key",
			"run", d.RunID, "task", d.Task, "err", err)
		keys = make([]string, len(def.RateLimits))
	}
	l.keys = keys
	units, caps, err := taskdef.RateLimitUnits(def, input, meta)
	if err != nil {
		r.log.Warn("taskq: rate limit units or limit failed at start; the run takes one unit of a limit of one",
			"run", d.RunID, "task", d.Task, "err", err)
		units, caps = make([]int, len(def.RateLimits)), make([]int, len(def.RateLimits))
		for i, rl := range def.RateLimits {
			units[i], caps[i] = rl.Units, rl.Limit
			if rl.UnitsExpression != "" || rl.LimitExpression != "" || units[i] > caps[i] {
				units[i], caps[i] = 1, 1
			}
		}
	}
	l.units, l.caps = units, caps
	return l
}

// take asks each limit in turn for the runs every earlier limit admitted:
// one round trip per limit, each a call per partition.
func (r *rateLimiter) take(ctx context.Context, lims []*limited) {
	for i := 0; ; i++ {
		var (
			reqs []engine.RateTake
			who  []*limited
		)
		for _, l := range lims {
			if i >= len(l.limits) || l.refused >= 0 || l.failed {
				continue
			}
			rl := l.limits[i]
			reqs = append(reqs, engine.RateTake{Name: rl.Name, Key: l.keys[i], Limit: l.caps[i], Period: rl.Period,
				Units: l.units[i], Token: l.token})
			who = append(who, l)
		}
		if len(reqs) == 0 {
			return
		}
		// The server's clock: every worker measures a shared limit by it.
		res, errs := r.store.TakeRateLimits(ctx, time.Time{}, reqs)
		for k, l := range who {
			switch {
			case errs[k] != nil:
				r.log.Warn("taskq: taking rate limit units failed; the delivery stays pending",
					"run", l.d.RunID, "task", l.d.Task, "limit", reqs[k].Name, "err", errs[k])
				l.failed = true
			case !res[k].Taken:
				l.refused, l.wait = i, res[k].Wait
			default:
				l.taken = append(l.taken, reqs[k])
			}
		}
	}
}

// giveBack returns the units taken for runs that do not start after all.
// Units it cannot give back stay taken until they leave the window: fewer
// starts, never more.
func (r *rateLimiter) giveBack(ctx context.Context, lims []*limited) {
	var reqs []engine.RateTake
	for _, l := range lims {
		if l.refused >= 0 || l.failed {
			reqs = append(reqs, l.taken...)
		}
	}
	if len(reqs) == 0 {
		return
	}
	_, errs := r.store.ReturnRateLimits(ctx, reqs)
	for k, err := range errs {
		if err != nil {
			r.log.Warn("taskq: giving rate limit units back failed; they stay taken for the period",
				"limit", reqs[k].Name, "key", reqs[k].Key, "units", reqs[k].Units, "err", err)
		}
	}
}

// hold defers each refused run until its limit has room.
func (r *rateLimiter) hold(ctx context.Context, lims []*limited) {
	var (
		defs []engine.Deferral
		who  []*limited
	)
	now := r.clock.Now()
	for _, l := range lims {
		if l.refused < 0 || l.failed {
			continue
		}
		rl := l.limits[l.refused]
		reason := fmt.Sprintf("rate limit %q", rl.Name)
		if k := l.keys[l.refused]; k != "" {
			reason += fmt.Sprintf(" key %q", k)
		}
		// Due on the next millisecond at or after the wait, the retry
		// zset's unit, so that the run is not queued a moment too early.
		due := now.Add(l.wait + time.Millisecond - 1).Truncate(time.Millisecond)
		defs = append(defs, engine.Deferral{Delivery: l.d, Due: due, Reason: reason})
		who = append(who, l)
	}
	if len(defs) == 0 {
		return
	}
	res, errs := r.store.DeferRuns(ctx, defs)
	for k, l := range who {
		switch {
		case errs[k] != nil:
			// The delivery stays pending and is reclaimed once its lease
			// lapses, to be asked again.
			r.log.Warn("taskq: holding back a rate-limited run failed", "run", l.d.RunID, "task", l.d.Task, "err", errs[k])
		case !res[k].Held:
			r.log.Debug("taskq: delivery skipped", "run", l.d.RunID, "reason", res[k].Reason)
		default:
			r.log.Debug("taskq: run held back by a rate limit", "run", l.d.RunID, "task", l.d.Task,
				"waiting", defs[k].Reason, "due", defs[k].Due)
			r.metrics.rateLimited(l.d.Task, l.limits[l.refused].Name, l.wait)
		}
	}
}
