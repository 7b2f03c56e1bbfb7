package faulttest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// recoveryBound is how soon after a replica's promotion triggers, workers
// and the HTTP API must work again on the partitions it took over.
const recoveryBound = 15 * time.Second

// failoverRig is a namespace on a private Redis Cluster: worker processes
// and an in-process client on cluster clients of their own, and the
// history they record.
type failoverRig struct {
	t     *testing.T
	pc    *redistest.PrivateCluster
	ns    string
	dir   string
	rdb   redis.UniversalClient
	rec   *history.Recorder
	c     *client.Client
	defs  map[string]*task.Definition
	parts int
	procs faulttest.Procs

	mu       sync.Mutex
	accepted []acceptedTrigger
	failed   []string // ops of triggers that returned an error
	// shortfalls are the triggers that were written but not acknowledged
	// by a replica in time (a *client.DurabilityError naming the run).
	shortfalls []acceptedTrigger
	workers    []*faulttest.Proc
	starts     []workerStart
}

// acceptedTrigger is a trigger that returned a run without error.
type acceptedTrigger struct {
	op, run string
	at      time.Time
}

// workerStart is a "started" line of a worker process.
type workerStart struct {
	worker, run string
	at          time.Time
}

func newFailoverRig(t *testing.T, pc *redistest.PrivateCluster, ns string, d task.Durability) *failoverRig {
	t.Helper()
	r := &failoverRig{t: t, pc: pc, ns: ns, dir: t.TempDir()}
	t.Cleanup(r.procs.KillAll)
	rec, f, err := history.Create(r.dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r.rec = rec
	if r.rdb, err = faulttest.Dial(pc.URL()); err != nil {
		t.Fatal(err)
	}
	faulttest.AddHook(r.rdb, history.NewHook(rec))
	// 16 partitions, several on each master, so that a killed master takes
	// some with it and leaves others (a namespace's default on a cluster
	// is one per master); the workers adopt the count.
	r.c, err = client.New(client.Options{Redis: r.rdb, Namespace: ns, Partitions: 16, Logger: quiet,
		OperationTimeout: 2 * time.Second, Durability: d})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close(); r.rdb.Close() })
	defs, err := faulttest.Definitions(faulttest.TaskConfig{})
	if err != nil {
		t.Fatal(err)
	}
	r.defs = map[string]*task.Definition{}
	for _, d := range defs {
		r.defs[d.Name] = d
	}
	parts, err := redisstore.StoreOf(clientlink.Store(r.c)).Partitions(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.parts = parts.Count()
	return r
}

// worker starts a worker process, waits until it consumes, and records
// the runs it starts.
func (r *failoverRig) worker(name string) *faulttest.Proc {
	r.t.Helper()
	cfg := faulttest.WorkerConfig{
		RedisURL: r.pc.URL(), Namespace: r.ns, Name: name, Concurrency: 6,
		Lease: 2 * time.Second, HistoryDir: r.dir, PrintStarts: true,
		Verbose: os.Getenv("TASKQ_FAULT_VERBOSE") != "",
	}
	p, err := faulttest.StartWorker(os.Args[0], []string{"-test.run=^$"}, cfg, os.Stderr)
	if err != nil {
		r.t.Fatal(err)
	}
	r.procs.Add(p)
	r.workers = append(r.workers, p)
	if _, err := p.WaitLine("ready", 30*time.Second); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		for {
			f, err := p.WaitLine("started ", time.Hour)
			if err != nil {
				return
			}
			r.mu.Lock()
			r.starts = append(r.starts, workerStart{worker: name, run: f[0], at: time.Now()})
			r.mu.Unlock()
		}
	}()
	return p
}

// masterOf is the index in the cluster's Nodes of the node serving
// partition part, as the rig's client sees it: call it while the cluster
// is stable.
func (r *failoverRig) masterOf(part int) int {
	r.t.Helper()
	cc := r.rdb.(*redis.ClusterClient)
	m, err := cc.MasterForKey(context.Background(), redisstore.PartitionPrefix(r.ns, part, r.parts)+"x")
	if err != nil {
		r.t.Fatal(err)
	}
	i := slices.Index(r.pc.Addrs(), m.Options().Addr)
	if i < 0 {
		r.t.Fatalf("partition %d's master %s is not a node of the cluster", part, m.Options().Addr)
	}
	return i
}

// partitionsOn lists the partitions whose slot node serves.
func (r *failoverRig) partitionsOn(node int) []int {
	var out []int
	for p := range r.parts {
		if r.masterOf(p) == node {
			out = append(out, p)
		}
	}
	return out
}

// keyIn returns a key of the status task, "s:<base>-<n>", in one of parts.
func (r *failoverRig) keyIn(parts []int, base string) string {
	for n := 0; ; n++ {
		k := fmt.Sprintf("%s-%d", base, n)
		if slices.Contains(parts, engine.KeyPartition(r.ns, faulttest.KeyPrefix[faulttest.TaskStatus]+k, r.parts)) {
			return k
		}
	}
}

// trigger triggers taskName with in, recording it.
func (r *failoverRig) trigger(ctx context.Context, taskName string, in faulttest.Input) (string, error) {
	raw, _ := json.Marshal(in)
	key := ""
	if p, ok := faulttest.KeyPrefix[taskName]; ok {
		key = p + in.Key
	}
	id, err := r.rec.Trigger(history.Op{Task: taskName, Key: key, Token: in.Op}, func() (string, error) {
		h, err := r.c.TriggerJSON(ctx, r.defs[taskName], raw)
		if err != nil {
			return "", err
		}
		return h.ID(), nil
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed = append(r.failed, in.Op)
		var de *client.DurabilityError
		if errors.As(err, &de) {
			r.shortfalls = append(r.shortfalls, acceptedTrigger{op: in.Op, run: de.Run.ID(), at: time.Now()})
		}
	} else {
		r.accepted = append(r.accepted, acceptedTrigger{op: in.Op, run: id, at: time.Now()})
	}
	return id, err
}

// burst triggers from several goroutines until stop closes or each has
// made max triggers: unique keys over the status, ttl and plain tasks,
// some runs failing once, some sleeping. It returns once every goroutine
// has stopped.
func (r *failoverRig) burst(stop <-chan struct{}, goroutines, max int, fired *atomic.Int64) {
	tasks := []string{faulttest.TaskStatus, faulttest.TaskTTL, faulttest.TaskPlain}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := 0; i < max; i++ {
				select {
				case <-stop:
					return
				default:
				}
				fired.Add(1)
				in := faulttest.Input{Op: fmt.Sprintf("b%d-%d", g, i), Key: fmt.Sprintf("k%d-%d", g, i)}
				switch i % 5 {
				case 1:
					in.Mode, in.FailTimes = faulttest.ModeFlaky, 1
				case 2:
					in.Mode, in.SleepMs = faulttest.ModeSleep, 30
				}
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, _ = r.trigger(ctx, tasks[(g+i)%len(tasks)], in)
				cancel()
				time.Sleep(15 * time.Millisecond)
			}
		})
	}
	wg.Wait()
}

// startBurst starts a burst of four goroutines and returns the function
// that stops it and waits for it (also called when the test ends).
func (r *failoverRig) startBurst(fired *atomic.Int64) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); r.burst(stop, 4, 2000, fired) }()
	var once sync.Once
	f := func() { once.Do(func() { close(stop) }); <-done }
	r.t.Cleanup(f)
	return f
}

// firstAccepted is the first trigger accepted after t whose run lives in
// one of parts; with shortfalls, a trigger that wrote its run but fell
// short of its durability counts too.
func (r *failoverRig) firstAccepted(after time.Time, parts []int, shortfalls bool) (acceptedTrigger, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := r.accepted
	if shortfalls {
		all = append(slices.Clip(all), r.shortfalls...)
		slices.SortFunc(all, func(a, b acceptedTrigger) int { return a.at.Compare(b.at) })
	}
	for _, a := range all {
		if p, _ := engine.RunPartition(a.run); a.at.After(after) && slices.Contains(parts, p) {
			return a, true
		}
	}
	return acceptedTrigger{}, false
}

// firstStart is the first run of one of parts that worker started after t.
func (r *failoverRig) firstStart(worker string, after time.Time, parts []int) (workerStart, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.starts {
		if p, _ := engine.RunPartition(s.run); s.worker == worker && s.at.After(after) && slices.Contains(parts, p) {
			return s, true
		}
	}
	return workerStart{}, false
}

// killMaster kills node victim, a master, with SIGKILL and waits until
// its replica has taken over its slots and the cluster is ok again; it
// returns when the promoted replica said so, and which node it is.
func (r *failoverRig) killMaster(victim int) (promoted int, at time.Time) {
	r.t.Helper()
	ctx := context.Background()
	nodes := r.pc.Nodes
	vc := redis.NewClient(&redis.Options{Addr: nodes[victim].Addr()})
	id, err := vc.ClusterMyID(ctx).Result()
	vc.Close()
	if err != nil {
		r.t.Fatal(err)
	}
	replica := -1
	for i, n := range nodes {
		if i == victim {
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		info, err := c.Info(ctx, "replication").Result()
		myID, _ := c.ClusterMyID(ctx).Result()
		nodesTxt, _ := c.ClusterNodes(ctx).Result()
		c.Close()
		if err != nil {
			continue
		}
		for _, l := range strings.Split(nodesTxt, "\n") {
			f := strings.Fields(l)
			if len(f) > 3 && f[0] == myID && f[3] == id && strings.Contains(info, "role:slave") {
				replica = i
			}
		}
	}
	if replica < 0 {
		r.t.Fatalf("node %d (%s) has no replica", victim, nodes[victim].Addr())
	}
	nodes[victim].Kill()
	rc := redis.NewClient(&redis.Options{Addr: nodes[replica].Addr()})
	defer rc.Close()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		info, err := rc.Info(cctx, "replication").Result()
		cinfo, cerr := rc.ClusterInfo(cctx).Result()
		cancel()
		if err == nil && cerr == nil && strings.Contains(info, "role:master") && strings.Contains(cinfo, "cluster_state:ok") {
			return replica, time.Now()
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("node %d's replica %s was not promoted within a minute: %v %s", victim, nodes[replica].Addr(), err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runsByOp reads every run of the namespace and groups their IDs by the
// op of their input.
func (r *failoverRig) runsByOp() (map[string][]*engine.Run, int) {
	r.t.Helper()
	ctx := context.Background()
	st := redisstore.StoreOf(clientlink.Store(r.c))
	ids, err := st.ListRunIDs(ctx, 0, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string][]*engine.Run{}
	for _, id := range ids {
		run, err := st.GetRun(ctx, id)
		if err != nil {
			r.t.Fatalf("run %s: %v", id, err)
		}
		var in faulttest.Input
		_ = json.Unmarshal(run.Input, &in)
		out[in.Op] = append(out[in.Op], run)
	}
	return out, len(ids)
}

// waitEnded waits until every run of the namespace has ended.
func (r *failoverRig) waitEnded(within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		byOp, _ := r.runsByOp()
		var active []string
		for _, runs := range byOp {
			for _, run := range runs {
				if !slices.Contains([]string{"succeeded", "failed", "cancelled"}, run.Status) {
					active = append(active, run.ID+" "+run.Status)
				}
			}
		}
		if len(active) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%d runs did not end within %s, among them %v", len(active), within, active[:min(len(active), 5)])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check reads back every run and key and checks the whole history.
func (r *failoverRig) check() *history.Report {
	r.t.Helper()
	ctx := context.Background()
	st := redisstore.StoreOf(clientlink.Store(r.c))
	ids, err := st.ListRunIDs(ctx, 0, 1<<20)
	if err != nil {
		r.t.Fatal(err)
	}
	if err := history.ReadRuns(ctx, r.rec, st, ids); err != nil {
		r.t.Fatal(err)
	}
	ops, err := history.ReadDir(r.dir)
	if err != nil {
		r.t.Fatal(err)
	}
	var keys []string
	for _, op := range ops {
		if op.Kind == history.KindTrigger && op.Key != "" {
			keys = append(keys, op.Key)
		}
	}
	if err := history.ReadKeys(ctx, r.rec, st, keys); err != nil {
		r.t.Fatal(err)
	}
	if ops, err = history.ReadDir(r.dir); err != nil {
		r.t.Fatal(err)
	}
	return history.Check(ops, history.Options{Timeout: 20 * time.Second, VisualizeDir: filepath.Join(r.dir, "illegal")})
}

// httpTrigger triggers the status task with key over the HTTP API at
// base, with durability d (nil: none), and returns the status code.
func httpTrigger(base, op, key string, d map[string]any) (int, error) {
	req := map[string]any{"input": faulttest.Input{Op: op, Key: key}}
	if d != nil {
		req["durability"] = d
	}
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/v1/tasks/"+faulttest.TaskStatus+"/runs", bytes.NewReader(body))
	hreq.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
