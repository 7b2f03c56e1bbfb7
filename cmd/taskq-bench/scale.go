package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/worker"
)

// The cluster mode (-cluster): a single node and a Redis Cluster measured
// side by side in one run, for cost and balance rather than throughput.
// On a small machine several masters share the same cores, so a cluster
// cannot show more triggers a second there; what decides how it scales on
// real hardware is what each trigger and each run costs a node, and how
// evenly the work falls on the masters. Those are read from the servers'
// own counters (INFO cpu and commandstats), which move much less with the
// machine's load than wall-clock rates do:
//
//   - trigger: n RunNoWait calls with distinct keys for one task, no worker
//     running: each master's script calls (FCALL, EVALSHA) and CPU seconds;
//   - e2e: n runs triggered while workers process them, until every run has
//     ended: the same, per completed run (its trigger included);
//   - latency: triggers paced at -rate per second, the time from when each
//     was due to its handler's start (the same workers on each backend: the
//     rate does not grow with the masters).
//
// With -cluster-per-master (the default) the cluster gets -concurrency
// callers and -workers workers per master in trigger and e2e, so that each
// master serves what the single node serves, as it would on hardware with
// a core per master.
//
// Trigger and e2e run in rounds, single node and cluster alternating, the
// order swapped each round; the median of the rounds is reported. The
// shares of each master are summed over the rounds.

// Targets of the cluster mode (issue 20).
const (
	shareTolerance  = 0.15 // each master's share within ±15% of even
	costRatioTarget = 1.2  // cluster CPU per trigger, per run ≤ 1.2× single
	latencyTarget   = 10 * time.Millisecond
)

// phase is what one measurement on one backend found.
type phase struct {
	n       int
	elapsed time.Duration
	nodes   []nodeStats // the counters' change, node by node
}

// masterCPU is the CPU seconds the masters spent, summed.
func (p phase) masterCPU(masters int) float64 {
	var s float64
	for _, n := range p.nodes[:masters] {
		s += n.cpu
	}
	return s
}

// replicaCPU is the CPU seconds the replicas spent, summed.
func (p phase) replicaCPU(masters int) float64 {
	var s float64
	for _, n := range p.nodes[masters:] {
		s += n.cpu
	}
	return s
}

// masterScriptTime is the seconds the masters spent inside script calls
// (commandstats usec of FCALL and EVALSHA), summed.
func (p phase) masterScriptTime(masters int) float64 {
	var s int64
	for _, n := range p.nodes[:masters] {
		s += n.scriptUsec
	}
	return float64(s) / 1e6
}

func (p phase) masterScripts(masters int) int64 {
	var s int64
	for _, n := range p.nodes[:masters] {
		s += n.scripts
	}
	return s
}

// perOp is µs per operation.
func perOp(seconds float64, n int) float64 { return seconds / float64(n) * 1e6 }

// scaleFigures collect one backend's phases over the rounds.
type scaleFigures struct {
	// triggers are batched as the client ships (concurrent triggers
	// coalesced, one script call per partition per batch); unbatched send
	// one trigger per script call, on every backend alike.
	triggers, unbatched, e2es []phase
	latency                   []time.Duration // sorted
	// workerConns is the connections each worker held on each master after
	// the e2e phase, averaged over the workers.
	workerConns []float64
	perMaster   []int
	home        int
}

func newNamespace() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return "bench-" + hex.EncodeToString(b)
}

// benchScale runs the cluster mode on the backends, single node first.
func benchScale(ctx context.Context, e *env, rep *report, backends []*backend) error {
	cfg := e.cfg
	figs := make([]*scaleFigures, len(backends))
	for i, b := range backends {
		figs[i] = &scaleFigures{}
		per, home, err := b.partitionsPerMaster(ctx, e.ns)
		if err != nil {
			return err
		}
		figs[i].perMaster, figs[i].home = per, home
		var ms []string
		for j, n := range b.nodes {
			role := "replica"
			if n.master {
				role = fmt.Sprintf("master %d (slots %s, %d partitions)", j+1, n.slots, per[j])
			}
			ms = append(ms, n.addr+" "+role)
		}
		e.printf("  %s: %s\n", b.label(), strings.Join(ms, "; "))
	}
	per := ""
	if cfg.perMaster {
		per = " per master"
	}
	e.printf("\n== cluster mode, trigger: %d triggers with distinct keys, one task, %d callers%s, no worker; %d rounds\n",
		cfg.n, cfg.concurrency, per, cfg.clusterRounds)
	for r := 0; r < cfg.clusterRounds; r++ {
		for k := range 2 * len(backends) {
			i, batching := (r+k)%len(backends), (r+k/len(backends))%2 == 0
			p, err := scaleTrigger(ctx, e, backends[i], r, batching)
			if err != nil {
				return fmt.Errorf("%s: %w", backends[i].label(), err)
			}
			what := "trigger"
			if batching {
				figs[i].triggers = append(figs[i].triggers, p)
			} else {
				figs[i].unbatched = append(figs[i].unbatched, p)
				what = "trigger, one per call"
			}
			printPhase(e, backends[i], what, r, p)
		}
	}
	e.printf("\n== cluster mode, e2e: %d runs triggered by %d callers%s while %d workers%s x %d slots process them; %d rounds\n",
		cfg.e2eN, cfg.concurrency, per, cfg.workers, per, cfg.workerConcurrency, cfg.clusterRounds)
	for r := 0; r < cfg.clusterRounds; r++ {
		for k := range backends {
			i := (r + k) % len(backends)
			p, conns, err := scaleEndToEnd(ctx, e, backends[i], r)
			if err != nil {
				return fmt.Errorf("%s: %w", backends[i].label(), err)
			}
			figs[i].e2es = append(figs[i].e2es, p)
			if figs[i].workerConns == nil {
				figs[i].workerConns = conns
			}
			printPhase(e, backends[i], "e2e", r, p)
		}
	}
	e.printf("\n== cluster mode, latency: %d triggers/s for %s (+%s warm-up), paced, %d workers x %d slots on each backend\n",
		cfg.rate, cfg.clusterLatency, cfg.warmup, cfg.workers, cfg.workerConcurrency)
	for i, b := range backends {
		lat, err := scaleLatency(ctx, e, b)
		if err != nil {
			return fmt.Errorf("%s: %w", b.label(), err)
		}
		figs[i].latency = lat
		e.printf("  %s: trigger -> handler start p50 %s p99 %s p99.9 %s max %s (n=%d)\n", b.label(),
			ms(quantile(lat, 0.5)), ms(quantile(lat, 0.99)), ms(quantile(lat, 0.999)), ms(quantile(lat, 1)), len(lat))
	}
	scaleReport(rep, backends, figs)
	return nil
}

func printPhase(e *env, b *backend, what string, r int, p phase) {
	var per []string
	for i, n := range p.nodes {
		role := "m"
		if i >= b.masters {
			role = "r"
		}
		per = append(per, fmt.Sprintf("%s%d %.0fms/%d", role, i+1, n.cpu*1e3, n.scripts))
	}
	var reads int64
	for _, n := range p.nodes[:b.masters] {
		reads += n.reads
	}
	rr := ""
	if reads > 0 {
		rr = fmt.Sprintf(", %.1f runs/XREADGROUP", float64(p.n)/float64(reads))
	}
	e.printf("  round %d %-16s %-22s %s in %s (%s): redis cpu %.1fµs/op on masters (+%.1fµs replicas), %.2f script calls/op%s; cpu/script calls per node: %s\n",
		r+1, b.label(), what, group(int64(p.n)), p.elapsed.Round(time.Millisecond), rate(float64(p.n)/p.elapsed.Seconds()),
		perOp(p.masterCPU(b.masters), p.n), perOp(p.replicaCPU(b.masters), p.n), float64(p.masterScripts(b.masters))/float64(p.n), rr,
		strings.Join(per, " "))
}

// scaleClient is a taskq client of namespace ns, dialled from the
// backend's URL as a user's would be.
func scaleClient(e *env, b *backend, ns string, batching bool) (*client.Client, error) {
	return client.New(client.Options{RedisURL: b.url, Namespace: ns, Partitions: b.partitions, Logger: e.log,
		DisableTriggerBatching: !batching})
}

// scaleWorkers starts n workers of namespace ns running handler.
func scaleWorkers(ctx context.Context, e *env, b *backend, ns string, n int, handler func(worker.Context, benchInput) (benchResult, error)) (func(), error) {
	var ws []*worker.Worker
	stop := func() {
		for _, w := range ws {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = w.Shutdown(sctx)
			cancel()
		}
	}
	for i := 0; i < n; i++ {
		w, err := worker.New(worker.Options{
			RedisURL: b.url, Namespace: ns, Partitions: b.partitions, Name: fmt.Sprintf("%s-w%d", ns, i),
			Concurrency: e.cfg.workerConcurrency, Logger: e.log,
		})
		if err == nil {
			err = worker.Handle(w, e.noop, handler)
		}
		if err == nil {
			err = w.Start(ctx)
		}
		if err != nil {
			stop()
			return nil, err
		}
		ws = append(ws, w)
	}
	return stop, nil
}

// scaleTrigger measures cfg.n triggers with distinct keys, no worker.
func scaleTrigger(ctx context.Context, e *env, b *backend, r int, batching bool) (phase, error) {
	cfg := e.cfg
	ns := e.ns
	defer b.deleteNamespace(ctx, ns)
	c, err := scaleClient(e, b, ns, batching)
	if err != nil {
		return phase{}, err
	}
	defer c.Close()
	trigger := func(prefix string) func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: prefix + strconv.Itoa(i)})
			return err
		}
	}
	// Warm-up: dial every node's pool and load the script on every master.
	callers := cfg.concurrency * b.scale(cfg)
	if _, err := drive(ctx, e, "warm-up", 20*callers, callers, 1, trigger("warm-")); err != nil {
		return phase{}, err
	}
	s0, err := b.stats(ctx)
	if err != nil {
		return phase{}, err
	}
	label := fmt.Sprintf("trigger %s round %d", b.label(), r+1)
	elapsed, err := drive(ctx, e, label, cfg.n, callers, 1, trigger("k-"))
	if err != nil {
		return phase{}, err
	}
	s1, err := b.stats(ctx)
	if err != nil {
		return phase{}, err
	}
	return phase{n: cfg.n, elapsed: elapsed, nodes: delta(s0, s1)}, nil
}

// scaleEndToEnd measures cfg.e2eN runs triggered while the workers run,
// until every one has ended (its handler returned and its stream entry is
// gone), and counts the connections each worker then holds on each master.
func scaleEndToEnd(ctx context.Context, e *env, b *backend, r int) (phase, []float64, error) {
	cfg := e.cfg
	ns := e.ns
	defer b.deleteNamespace(ctx, ns)
	base, err := b.stats(ctx)
	if err != nil {
		return phase{}, nil, err
	}
	var handled atomic.Int64
	stopWorkers, err := scaleWorkers(ctx, e, b, ns, cfg.workers*b.scale(cfg), func(worker.Context, benchInput) (benchResult, error) {
		handled.Add(1)
		return benchResult{}, nil
	})
	if err != nil {
		return phase{}, nil, err
	}
	defer func() {
		if stopWorkers != nil {
			stopWorkers()
		}
	}()
	c, err := scaleClient(e, b, ns, true)
	if err != nil {
		return phase{}, nil, err
	}
	defer c.Close()
	trigger := func(prefix string) func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			_, err := client.RunNoWait(ctx, c, e.noop, benchInput{ID: prefix + strconv.Itoa(i)})
			return err
		}
	}
	// Until every run has ended: its handler has returned, and its finish
	// has removed its stream entry. The streams are read only once the
	// handlers are done, so that polling adds little to the counters.
	waitEnded := func(want int64) error {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if handled.Load() >= want {
				left, err := b.queued(ctx, ns, e.noop.Name())
				if err != nil {
					return err
				}
				if left == 0 {
					return nil
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%d of %d runs handled within 2m", handled.Load(), want)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	callers := cfg.concurrency * b.scale(cfg)
	warm := 10 * callers
	if _, err := drive(ctx, e, "warm-up", warm, callers, 1, trigger("warm-")); err != nil {
		return phase{}, nil, err
	}
	if err := waitEnded(int64(warm)); err != nil {
		return phase{}, nil, err
	}
	s0, err := b.stats(ctx)
	if err != nil {
		return phase{}, nil, err
	}
	began := time.Now()
	label := fmt.Sprintf("e2e %s round %d", b.label(), r+1)
	if _, err := drive(ctx, e, label, cfg.e2eN, callers, 1, trigger("k-")); err != nil {
		return phase{}, nil, err
	}
	if err := waitEnded(int64(warm + cfg.e2eN)); err != nil {
		return phase{}, nil, err
	}
	elapsed := time.Since(began)
	s1, err := b.stats(ctx)
	if err != nil {
		return phase{}, nil, err
	}
	held, err := b.countKeys(ctx, ns, "key:*")
	if err != nil {
		return phase{}, nil, fmt.Errorf("count the idempotency keys still held: %w", err)
	}
	if held != 0 {
		return phase{}, nil, fmt.Errorf("after every run ended, %d idempotency keys are still held", held)
	}
	// The workers' connections: what is connected now, with the client
	// closed, beyond what was before the workers started.
	_ = c.Close()
	time.Sleep(100 * time.Millisecond) // the server notices closed connections
	s2, err := b.stats(ctx)
	if err != nil {
		return phase{}, nil, err
	}
	conns := make([]float64, b.masters)
	for i := range conns {
		conns[i] = float64(s2[i].clients-base[i].clients) / float64(cfg.workers*b.scale(cfg))
	}
	return phase{n: cfg.e2eN, elapsed: elapsed, nodes: delta(s0, s1)}, conns, nil
}

// scaleLatency offers cfg.rate triggers a second for cfg.clusterLatency
// after cfg.warmup, each due at start + i/rate whether or not the ones
// before it returned, and records how long after it was due its handler
// started. It waits for no result.
func scaleLatency(ctx context.Context, e *env, b *backend) ([]time.Duration, error) {
	cfg := e.cfg
	ns := e.ns
	defer b.deleteNamespace(ctx, ns)
	total := int(float64(cfg.rate) * (cfg.warmup + cfg.clusterLatency).Seconds())
	skip := int(float64(cfg.rate) * cfg.warmup.Seconds())
	var mu sync.Mutex
	starts := make([]time.Duration, 0, total)
	var handled atomic.Int64
	stopWorkers, err := scaleWorkers(ctx, e, b, ns, cfg.workers, func(_ worker.Context, in benchInput) (benchResult, error) {
		d := time.Since(time.Unix(0, in.T))
		if i, _ := strconv.Atoi(in.ID[len("lat-"):]); i >= skip {
			mu.Lock()
			starts = append(starts, d)
			mu.Unlock()
		}
		handled.Add(1)
		return benchResult{}, nil
	})
	if err != nil {
		return nil, err
	}
	defer stopWorkers()
	c, err := scaleClient(e, b, ns, true)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	m := startMeter(e, "latency "+b.label(), int64(total))
	failed, firstErr := paced(ctx, total, cfg.rate, m, func(i int, due time.Time) error {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := client.RunNoWait(tctx, c, e.noop, benchInput{ID: "lat-" + strconv.Itoa(i), T: due.UnixNano()})
		return err
	})
	m.stop()
	if firstErr != nil {
		return nil, fmt.Errorf("%d triggers failed, first: %w", failed, firstErr)
	}
	deadline := time.Now().Add(30 * time.Second)
	for handled.Load() < int64(total) {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("%d of %d handlers started within 30s", handled.Load(), total)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(starts)
	return starts, nil
}

// shares are each master's part of a total, and their deviation from an
// even part (share × masters − 1: +0.10 is 10% above even).
func shares(parts []float64) (share, dev []float64) {
	var sum float64
	for _, p := range parts {
		sum += p
	}
	for _, p := range parts {
		s := 0.0
		if sum > 0 {
			s = p / sum
		}
		share = append(share, s)
		dev = append(dev, s*float64(len(parts))-1)
	}
	return share, dev
}

// balanceRows add each master's share of a phase's script calls and CPU,
// summed over the rounds.
func balanceRows(rep *report, b *backend, what string, ps []phase, perMaster []int, home int) {
	calls := make([]float64, b.masters)
	cpu := make([]float64, b.masters)
	for _, p := range ps {
		for i := range calls {
			calls[i] += float64(p.nodes[i].scripts)
			cpu[i] += p.nodes[i].cpu
		}
	}
	cs, cd := shares(calls)
	us, ud := shares(cpu)
	for i := range calls {
		ok := abs(cd[i]) <= shareTolerance && abs(ud[i]) <= shareTolerance
		h := ""
		if i == home {
			h = ", home"
		}
		rep.add(row{scenario: "cluster", variant: fmt.Sprintf("%s: master %d share (%d of %d partitions%s)", what, i+1, perMaster[i], b.partitions, h),
			figure: fmt.Sprintf("script calls %.1f%% (%+.1f%%), CPU %.1f%% (%+.1f%%)", cs[i]*100, cd[i]*100, us[i]*100, ud[i]*100),
			ratio:  "of even " + fmt.Sprintf("%.1f%%", 100/float64(b.masters)), target: "±15% of even", verdict: verdict(ok)})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// scaleReport adds the cluster mode's rows: cost per trigger and per run
// (single node, then cluster beside it, with the ratio), balance, latency,
// connections.
func scaleReport(rep *report, backends []*backend, figs []*scaleFigures) {
	single, singleFig := backends[0], figs[0]
	type cost struct{ master, replica, scripts, rate, script float64 }
	costOf := func(b *backend, ps []phase) cost {
		var m, rp, ev, rt, sc []float64
		for _, p := range ps {
			m = append(m, perOp(p.masterCPU(b.masters), p.n))
			sc = append(sc, perOp(p.masterScriptTime(b.masters), p.n))
			rp = append(rp, perOp(p.replicaCPU(b.masters), p.n))
			ev = append(ev, float64(p.masterScripts(b.masters))/float64(p.n))
			rt = append(rt, float64(p.n)/p.elapsed.Seconds())
		}
		return cost{median(m), median(rp), median(ev), median(rt), median(sc)}
	}
	for _, what := range []string{"trigger", "trigger, one per call", "e2e"} {
		pick := func(f *scaleFigures) []phase {
			switch what {
			case "trigger":
				return f.triggers
			case "e2e":
				return f.e2es
			}
			return f.unbatched
		}
		unit := map[string]string{"e2e": "completed run"}[what]
		if unit == "" {
			unit = "trigger"
		}
		ref := costOf(single, pick(singleFig))
		for i, b := range backends {
			c := costOf(b, pick(figs[i]))
			x := row{scenario: "cluster", variant: what + " " + b.label(),
				figure: fmt.Sprintf("redis CPU %.1fµs per %s (masters' sum; replicas +%.1fµs; in scripts %.1fµs), %.2f script calls per %s; %s (wall clock, shared cores)",
					c.master, unit, c.replica, c.script, c.scripts, unit, rate(c.rate))}
			if i > 0 {
				x.ratio = ratio(c.master, ref.master) + " of single"
				x.target, x.verdict = "<=1.2x", verdict(c.master <= costRatioTarget*ref.master)
			}
			rep.add(x)
		}
	}
	for i, b := range backends {
		if b.masters > 1 {
			balanceRows(rep, b, "trigger", figs[i].triggers, figs[i].perMaster, figs[i].home)
			balanceRows(rep, b, "e2e", figs[i].e2es, figs[i].perMaster, figs[i].home)
		}
	}
	for i, b := range backends {
		lat := figs[i].latency
		p99 := quantile(lat, 0.99)
		rep.add(row{scenario: "cluster", variant: "latency " + b.label() + ": trigger -> handler start",
			figure: fmt.Sprintf("p50 %s  p99 %s  p99.9 %s (n=%d)", ms(quantile(lat, 0.5)), ms(p99), ms(quantile(lat, 0.999)), len(lat)),
			target: "p99 <10ms", verdict: verdict(len(lat) > 0 && p99 < latencyTarget)})
	}
	for i, b := range backends {
		var parts []string
		var sum float64
		for _, c := range figs[i].workerConns {
			parts = append(parts, fmt.Sprintf("%.1f", c))
			sum += c
		}
		rep.add(row{scenario: "cluster", variant: "connections per worker " + b.label(),
			figure: fmt.Sprintf("%.1f in all; per master %s (after the e2e burst, idle)", sum, strings.Join(parts, " / "))})
	}
}
