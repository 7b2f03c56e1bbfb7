// Package soak runs taskq for minutes under mixed load with faults
// injected, on a redis-server and worker processes of its own, then checks
// the recorded history and reports: triggers accepted, collisions, runs
// completed and lost, double ownership, and Redis memory before and after
// retention. cmd/taskq-soak is its command; `make soak` runs it.
package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Options configure a soak. Zero values mean the defaults.
type Options struct {
	// Duration of the load (default 2m). The soak then drains, waits for
	// retention and checks, which takes a little longer.
	Duration time.Duration
	// MaxTriggers bounds the load whatever its duration (default 200,000).
	MaxTriggers int
	Clients     int // goroutines triggering (default 4)
	Workers     int // worker processes (default 3)
	// SharedKeys is how many keys duplicates are drawn from (default 64).
	SharedKeys int
	// Retention of run records (default 5s): after it, Redis must be back
	// to its baseline.
	Retention time.Duration
	// FaultEvery is the time between injected faults (default 5s; negative
	// injects none).
	FaultEvery time.Duration
	// Exe is the program to start worker processes with; it must call
	// faulttest.MaybeRunRole first thing (default: this program).
	Exe string
	// Dir keeps the Redis data and the history (default: a temporary
	// directory, removed afterwards).
	Dir string
	// Log receives progress lines (default stderr).
	Log io.Writer
}

func (o Options) withDefaults() (Options, error) {
	if o.Duration == 0 {
		o.Duration = 2 * time.Minute
	}
	if o.MaxTriggers == 0 {
		o.MaxTriggers = 200_000
	}
	if o.Clients == 0 {
		o.Clients = 4
	}
	if o.Workers == 0 {
		o.Workers = 3
	}
	if o.SharedKeys == 0 {
		o.SharedKeys = 64
	}
	if o.Retention == 0 {
		o.Retention = 5 * time.Second
	}
	if o.FaultEvery == 0 {
		o.FaultEvery = 5 * time.Second
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.Exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return o, err
		}
		o.Exe = exe
	}
	switch {
	case o.Duration < 0 || o.MaxTriggers < 0 || o.Clients < 0 || o.Workers < 0 || o.SharedKeys < 0:
		return o, errors.New("soak: durations and counts must not be negative")
	case o.Retention < time.Second:
		return o, fmt.Errorf("soak: Retention %s is below 1s", o.Retention)
	}
	return o, nil
}

// Report is the outcome of a soak.
type Report struct {
	Duration time.Duration
	// Faults injected, by kind.
	Faults map[string]int
	// History is the checker's report on the whole history.
	History *history.Report
	// Redis memory (used_memory) and taskq key count before the load and
	// after retention.
	MemoryBefore, MemoryAfter int64
	KeysBefore, KeysAfter     int
	// LeftOver names taskq keys there after retention that were not
	// there before the load (the first 20).
	LeftOver []string
}

// OK reports whether the soak found nothing wrong: no run lost, no rule of
// the history broken, and Redis back to its baseline.
func (r *Report) OK() bool {
	return len(r.History.Violations) == 0 && len(r.History.Lost) == 0 && r.MemoryBack()
}

// MemoryBack reports whether Redis returned to its baseline: the same
// number of taskq keys, and used memory within 1 MiB or 10% of it.
func (r *Report) MemoryBack() bool {
	slack := max(int64(1<<20), r.MemoryBefore/10)
	return r.KeysAfter <= r.KeysBefore && r.MemoryAfter <= r.MemoryBefore+slack
}

// Write prints the report.
func (r *Report) Write(w io.Writer) {
	h := r.History
	var faults []string
	for _, k := range []string{"worker-kill", "worker-pause", "redis-restart", "connection-cut", "short-deadline"} {
		faults = append(faults, fmt.Sprintf("%s %d", k, r.Faults[k]))
	}
	fmt.Fprintf(w, "taskq soak report (%s of load)\n", r.Duration.Round(time.Second))
	fmt.Fprintf(w, "  faults injected:          %s\n", strings.Join(faults, ", "))
	fmt.Fprintf(w, "  triggers:                 %d\n", h.Triggers)
	fmt.Fprintf(w, "  triggers accepted:        %d\n", h.Accepted)
	fmt.Fprintf(w, "  collisions:               %d\n", h.Collisions)
	fmt.Fprintf(w, "  triggers failed:          %d definite, %d with unknown outcome (Redis down, deadline)\n", h.Failed, h.Indeterminate)
	done := 0
	for _, n := range h.Ended {
		done += n
	}
	fmt.Fprintf(w, "  runs created:             %d\n", h.Runs)
	fmt.Fprintf(w, "  runs completed:           %d (succeeded %d, failed %d, cancelled %d, record expired %d)\n",
		done, h.Ended["succeeded"], h.Ended["failed"], h.Ended["cancelled"], h.Ended["expired"])
	fmt.Fprintf(w, "  runs lost:                %d\n", len(h.Lost))
	fmt.Fprintf(w, "  double-ownership:         %d\n", h.DoubleOwners)
	fmt.Fprintf(w, "  stale writes accepted:    %d\n", h.StaleWrites)
	lin := "linearizable"
	if h.Has(history.RuleLinearizable) {
		lin = "NOT linearizable"
	}
	if len(h.Inconclusive) > 0 {
		lin += fmt.Sprintf(" (%d partition(s) inconclusive: search timed out)", len(h.Inconclusive))
	}
	fmt.Fprintf(w, "  history:                  %d operations, %d partitions, %s\n", h.Ops, h.Partitions, lin)
	fmt.Fprintf(w, "  violations:               %d\n", len(h.Violations))
	fmt.Fprintf(w, "  redis memory:             before %s, after retention %s\n", mib(r.MemoryBefore), mib(r.MemoryAfter))
	fmt.Fprintf(w, "  taskq keys:               before %d, after retention %d\n", r.KeysBefore, r.KeysAfter)
	for _, k := range r.LeftOver {
		fmt.Fprintf(w, "    left over: %s\n", k)
	}
	for i, v := range h.Violations {
		if i == 10 {
			fmt.Fprintf(w, "  ... %d more violations\n", len(h.Violations)-i)
			break
		}
		fmt.Fprintf(w, "  %s\n", strings.ReplaceAll(v.String(), "\n", "\n  "))
	}
	if r.OK() {
		fmt.Fprintln(w, "PASS")
	} else {
		fmt.Fprintln(w, "FAIL")
	}
}

func mib(b int64) string { return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20)) }

// soak holds a running soak.
type soak struct {
	o      Options
	srv    *server
	dir    string
	ns     string
	procs  faulttest.Procs
	proxy  *faulttest.Proxy
	c      *client.Client
	rdb    *redis.Client
	direct *redis.Client
	rec    *history.Recorder
	recF   *os.File
	defs   []*task.Definition
	wcfg   faulttest.WorkerConfig

	mu      sync.Mutex
	workers []*faulttest.Proc
	nextW   int
	faults  map[string]int
	runs    []string
	keys    map[string]bool
	fired   atomic.Int64
	cancels sync.WaitGroup
}

func (s *soak) logf(format string, args ...any) {
	fmt.Fprintf(s.o.Log, "soak: "+format+"\n", args...)
}

// Run runs a soak and returns its report. The error is for a soak that
// could not run; what the soak found is in the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &soak{o: o, ns: "soak", faults: map[string]int{}, keys: map[string]bool{}}
	if s.dir = o.Dir; s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "taskq-soak-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(s.dir)
	}
	histDir := s.dir + "/history"
	if err := os.MkdirAll(histDir, 0o755); err != nil {
		return nil, err
	}
	if s.srv, err = startServer(s.dir); err != nil {
		return nil, err
	}
	defer s.srv.kill()
	defer s.procs.KillAll()
	s.logf("redis-server on %s (AOF, appendfsync always); history in %s", s.srv.addr(), histDir)

	if err := s.setup(histDir); err != nil {
		return nil, err
	}
	defer s.close()

	// Baseline: workers registered, scripts loaded, one run of each task
	// done and gone after retention.
	if err := s.warmUp(ctx); err != nil {
		return nil, err
	}
	rep := &Report{Faults: s.faults}
	var before map[string]bool
	if rep.MemoryBefore, before, err = s.settled(ctx); err != nil {
		return nil, err
	}
	rep.KeysBefore = len(before)
	s.logf("baseline: %s, %d keys; load for %s", mib(rep.MemoryBefore), rep.KeysBefore, o.Duration)

	began := time.Now()
	lctx, stop := context.WithTimeout(ctx, o.Duration)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.injectFaults(lctx) }()
	s.load(lctx)
	stop()
	wg.Wait()
	s.cancels.Wait()
	rep.Duration = time.Since(began)
	s.logf("load done: %d triggers; draining", s.fired.Load())

	if err := s.drain(ctx, 3*time.Minute); err != nil {
		s.logf("drain: %v", err)
	}
	if err := s.readBack(ctx); err != nil {
		return nil, err
	}
	for _, p := range s.live() {
		p.Stop(5 * time.Second)
	}
	var after map[string]bool
	if rep.MemoryAfter, after, err = s.settled(ctx); err != nil {
		return nil, err
	}
	rep.KeysAfter = len(after)
	for k := range after {
		if !before[k] && len(rep.LeftOver) < 20 {
			rep.LeftOver = append(rep.LeftOver, k)
		}
	}
	slices.Sort(rep.LeftOver)
	ops, err := history.ReadDir(histDir)
	if err != nil {
		return nil, err
	}
	s.logf("checking %d operations", len(ops))
	rep.History = history.Check(ops, history.Options{Timeout: 60 * time.Second, VisualizeDir: s.dir + "/illegal"})
	return rep, nil
}

func (s *soak) setup(histDir string) error {
	var err error
	if s.proxy, err = faulttest.NewProxy(s.srv.addr()); err != nil {
		return err
	}
	rec, f, err := history.Create(histDir, "client")
	if err != nil {
		return err
	}
	s.rec, s.recF = rec, f
	// Clients go through the proxy, so their connections can be cut.
	s.rdb = redis.NewClient(&redis.Options{Addr: s.proxy.Addr()})
	s.rdb.AddHook(history.NewHook(rec))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if s.c, err = client.New(client.Options{Redis: s.rdb, Namespace: s.ns, Retention: s.o.Retention, Logger: quiet, OperationTimeout: 2 * time.Second}); err != nil {
		return err
	}
	s.direct = redis.NewClient(&redis.Options{Addr: s.srv.addr()})
	tasks := faulttest.TaskConfig{TTL: time.Second, FallbackTTL: 30 * time.Second, Retain: 500 * time.Millisecond}
	if s.defs, err = faulttest.Definitions(tasks); err != nil {
		return err
	}
	s.wcfg = faulttest.WorkerConfig{RedisURL: s.srv.url(), Namespace: s.ns, Lease: time.Second, Tasks: tasks, HistoryDir: histDir, Concurrency: 16}
	for i := 0; i < s.o.Workers; i++ {
		if _, err := s.startWorker(); err != nil {
			return err
		}
	}
	return nil
}

func (s *soak) close() {
	s.recF.Close()
	s.c.Close()
	s.rdb.Close()
	s.direct.Close()
	s.proxy.Close()
}

func (s *soak) startWorker() (*faulttest.Proc, error) {
	s.mu.Lock()
	s.nextW++
	cfg := s.wcfg
	cfg.Name = "w" + strconv.Itoa(s.nextW)
	s.mu.Unlock()
	p, err := faulttest.StartWorker(s.o.Exe, nil, cfg, os.Stderr)
	if err != nil {
		return nil, err
	}
	s.procs.Add(p)
	if _, err := p.WaitLine("ready", 60*time.Second); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.workers = append(s.workers, p)
	s.mu.Unlock()
	return p, nil
}

// live returns the worker processes still running.
func (s *soak) live() []*faulttest.Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*faulttest.Proc
	for _, p := range s.workers {
		select {
		case <-p.Done():
		default:
			out = append(out, p)
		}
	}
	return out
}

func (s *soak) warmUp(ctx context.Context) error {
	for _, d := range s.defs {
		raw, _ := json.Marshal(faulttest.Input{Op: "warm-up-" + d.Name, Key: "warm-up"})
		h, err := s.c.TriggerJSON(ctx, d, raw)
		if err != nil {
			return fmt.Errorf("soak: warm-up trigger: %w", err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_, err = h.Wait(wctx)
		cancel()
		if err != nil {
			return fmt.Errorf("soak: warm-up run: %w", err)
		}
	}
	return nil
}

// settled waits for retention to remove every ended run, sweeps the runs
// index, and measures Redis: its used memory and the namespace's keys.
func (s *soak) settled(ctx context.Context) (int64, map[string]bool, error) {
	// Sweeping the index is the workers' janitor's duty, which the
	// Inspector does not offer: the soak does it itself, as test tooling.
	// So is trimming the suppressed-trigger records, which are kept for a
	// day, not for the runs' retention: the soak trims them all, and an
	// emptied stream (Redis keeps the key) does not count as left over.
	st := redisstore.StoreOf(clientlink.Store(s.c))
	time.Sleep(s.o.Retention + max(s.wcfg.Tasks.TTL, time.Second) + time.Second)
	parts, err := st.Partitions(ctx)
	if err != nil {
		return 0, nil, err
	}
	emptied := map[string]bool{}
	for part := range parts.Count() {
		if _, err := st.TrimSuppressed(ctx, part, time.Now().Add(time.Second)); err != nil {
			return 0, nil, err
		}
		if k := parts.Keys(part).Suppressed(); s.direct.XLen(ctx, k).Val() == 0 {
			emptied[k] = true
		}
	}
	for part := range parts.Count() {
		for offset := 0; ; {
			removed, looked, err := st.SweepRuns(ctx, part, time.Now(), offset, 1000)
			if err != nil {
				return 0, nil, err
			}
			offset += looked - removed
			if looked < 1000 {
				break
			}
		}
	}
	keys := map[string]bool{}
	for _, pattern := range redisstore.NamespacePatterns(s.ns) {
		var cursor uint64
		for {
			ks, next, err := s.direct.Scan(ctx, cursor, pattern, 1000).Result()
			if err != nil {
				return 0, nil, err
			}
			for _, k := range ks {
				if !emptied[k] {
					keys[k] = true
				}
			}
			if cursor = next; cursor == 0 {
				break
			}
		}
	}
	// A worker's record outlives it, by design: a worker that was killed
	// stays listed as dead for engine.WorkerKeepDefault, its record
	// expiring then. Records that expire do not count (which worker the
	// faults killed differs from one soak to the next); one without an
	// expiry does.
	// So do the run statistics' hashes (one a minute, one every ten
	// minutes, each kept for hours after its span): counters of the
	// namespace, not of any run. Those that expire do not count; one
	// without an expiry does.
	home := parts.Keys(0)
	workerPrefix := home.Worker("")
	for k := range keys {
		if (strings.HasPrefix(k, workerPrefix) || home.IsRunStats(k)) && s.direct.PTTL(ctx, k).Val() > 0 {
			delete(keys, k)
		}
	}
	info, err := s.direct.Info(ctx, "memory").Result()
	if err != nil {
		return 0, nil, err
	}
	var used int64
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "used_memory:"); ok {
			used, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return used, keys, nil
}

// load triggers until ctx ends or MaxTriggers is reached.
func (s *soak) load(ctx context.Context) {
	var wg sync.WaitGroup
	for g := 0; g < s.o.Clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), uint64(time.Now().UnixNano())))
			for i := 0; ctx.Err() == nil; i++ {
				n := s.fired.Add(1)
				if n > int64(s.o.MaxTriggers) {
					return
				}
				s.triggerOne(ctx, rng, fmt.Sprintf("c%d-%d", g, i))
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
}

func (s *soak) triggerOne(ctx context.Context, rng *rand.Rand, op string) {
	def := s.defs[rng.IntN(len(s.defs))]
	in := faulttest.Input{Op: op, Key: op}
	if rng.IntN(2) == 0 {
		in.Key = "shared" + strconv.Itoa(rng.IntN(s.o.SharedKeys))
	}
	hold := false
	switch p := rng.IntN(100); {
	case p < 15:
		in.Mode, in.FailTimes = faulttest.ModeFlaky, 1+rng.IntN(2)
	case p < 25:
		in.Mode, in.SleepMs = faulttest.ModeSleep, 20+rng.IntN(80)
	case p < 30:
		in.Mode = faulttest.ModeFail
	case p < 35:
		// Held until cancelled; a run whose trigger's caller never
		// learnt its ID (the call timed out) ends on its own.
		in.Mode, in.SleepMs, hold = faulttest.ModeSleep, 3000, true
	}
	key := ""
	if pre, ok := faulttest.KeyPrefix[def.Name]; ok {
		key = pre + in.Key
	}
	timeout := 2 * time.Second
	if rng.IntN(100) < 2 {
		// A caller that gives up mid-call: the outcome is unknown to it.
		timeout = time.Duration(rng.IntN(2000)) * time.Microsecond
		s.count("short-deadline")
	}
	raw, _ := json.Marshal(in)
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	id, err := s.rec.Trigger(history.Op{Task: def.Name, Key: key, Token: op}, func() (string, error) {
		h, err := s.c.TriggerJSON(tctx, def, raw)
		if err != nil {
			return "", err
		}
		return h.ID(), nil
	})
	cancel()
	s.mu.Lock()
	if key != "" {
		s.keys[key] = true
	}
	if err == nil {
		s.runs = append(s.runs, id)
	}
	s.mu.Unlock()
	if err == nil && hold {
		s.cancels.Add(1)
		go func() {
			defer s.cancels.Done()
			time.Sleep(time.Duration(100+rng.IntN(300)) * time.Millisecond)
			for try := 0; try < 50; try++ {
				cctx, cancel := context.WithTimeout(context.Background(), time.Second)
				_, err := s.c.Handle(id).Cancel(cctx)
				cancel()
				if err == nil || errors.Is(err, client.ErrRunNotFound) {
					return
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
}

func (s *soak) count(kind string) {
	s.mu.Lock()
	s.faults[kind]++
	s.mu.Unlock()
}

// injectFaults rotates through the faults until ctx ends.
func (s *soak) injectFaults(ctx context.Context) {
	if s.o.FaultEvery < 0 {
		return
	}
	kinds := []string{"worker-kill", "connection-cut", "worker-pause", "redis-restart"}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.o.FaultEvery):
		}
		kind := kinds[i%len(kinds)]
		live := s.live()
		switch kind {
		case "worker-kill":
			if len(live) == 0 {
				continue
			}
			victim := live[i%len(live)]
			victim.Kill()
			s.logf("fault: SIGKILL worker %s", victim.Name)
			if _, err := s.startWorker(); err != nil {
				s.logf("starting a replacement worker: %v", err)
			}
		case "worker-pause":
			if len(live) == 0 {
				continue
			}
			victim := live[i%len(live)]
			if err := victim.Pause(); err != nil {
				continue
			}
			s.logf("fault: SIGSTOP worker %s past its lease", victim.Name)
			time.Sleep(s.wcfg.Lease + 500*time.Millisecond)
			_ = victim.Resume()
		case "redis-restart":
			s.srv.kill()
			s.logf("fault: redis-server killed; restarting in 1s")
			time.Sleep(time.Second)
			if err := s.srv.start(); err != nil {
				s.logf("restarting redis-server: %v", err)
			}
		case "connection-cut":
			s.proxy.CutAll()
			s.logf("fault: client connections cut")
		}
		s.count(kind)
	}
}

// drain waits until every run a trigger returned has ended.
func (s *soak) drain(ctx context.Context, limit time.Duration) error {
	in := s.c.Inspector()
	pending, err := s.allRunIDs(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	pending = append(pending, s.runs...)
	s.mu.Unlock()
	deadline := time.Now().Add(limit)
	for len(pending) > 0 {
		var still []string
		for _, id := range pending {
			info, err := in.GetRun(ctx, id)
			if errors.Is(err, client.ErrRunNotFound) || err == nil && info.Status.Terminal() {
				continue
			}
			still = append(still, id)
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d runs still not ended after %s (first: %s)", len(pending), limit, pending[0])
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

// readBack records the final status of every run and owner of every key.
func (s *soak) readBack(ctx context.Context) error {
	st := redisstore.StoreOf(clientlink.Store(s.c)) // the history's read-back reads Redis as it is
	ids, err := s.allRunIDs(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	for _, id := range s.runs {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	keys := make([]string, 0, len(s.keys))
	for k := range s.keys {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	if err := history.ReadRuns(ctx, s.rec, st, ids); err != nil {
		return err
	}
	return history.ReadKeys(ctx, s.rec, st, keys)
}

// allRunIDs lists every run of the namespace, newest first.
func (s *soak) allRunIDs(ctx context.Context) ([]string, error) {
	var ids []string
	st := clientlink.Store(s.c)
	for {
		page, err := st.ListRunIDs(ctx, int64(len(ids)), client.ListLimitMax)
		if err != nil {
			return nil, err
		}
		ids = append(ids, page...)
		if len(page) < client.ListLimitMax {
			return ids, nil
		}
	}
}
