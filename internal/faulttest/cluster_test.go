package faulttest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

func TestMain(m *testing.M) {
	faulttest.MaybeRunRole()
	os.Exit(m.Run())
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// cluster is a redis-server of the test's own, worker processes, and an
// in-process client, all recording one history.
type cluster struct {
	t      *testing.T
	srv    *redistest.Server
	ns     string
	dir    string
	tasks  faulttest.TaskConfig
	procs  faulttest.Procs
	c      *client.Client
	rdb    *redis.Client
	rec    *history.Recorder
	defs   map[string]*task.Definition
	nextID int

	mu   sync.Mutex
	runs []string // run IDs triggers returned
	keys map[string]bool
}

func newCluster(t *testing.T, tasks faulttest.TaskConfig) *cluster {
	t.Helper()
	cl := &cluster{t: t, srv: redistest.StartServer(t), ns: "fault", dir: t.TempDir(), tasks: tasks, keys: map[string]bool{}}
	t.Cleanup(cl.procs.KillAll)
	rec, f, err := history.Create(cl.dir, "client")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	cl.rec = rec
	cl.rdb = redis.NewClient(&redis.Options{Addr: cl.srv.Addr()})
	cl.rdb.AddHook(history.NewHook(rec))
	cl.c, err = client.New(client.Options{Redis: cl.rdb, Namespace: cl.ns, Logger: quiet, OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.c.Close(); cl.rdb.Close() })
	defs, err := faulttest.Definitions(tasks)
	if err != nil {
		t.Fatal(err)
	}
	cl.defs = map[string]*task.Definition{}
	for _, d := range defs {
		cl.defs[d.Name] = d
	}
	return cl
}

// worker starts a worker process and waits until it consumes.
func (cl *cluster) worker(tweak func(*faulttest.WorkerConfig)) *faulttest.Proc {
	cl.t.Helper()
	cl.nextID++
	cfg := faulttest.WorkerConfig{
		RedisURL: cl.srv.URL(), Namespace: cl.ns, Name: fmt.Sprintf("w%d", cl.nextID),
		Lease: time.Second, Tasks: cl.tasks, HistoryDir: cl.dir, PrintStarts: true,
		Verbose: os.Getenv("TASKQ_FAULT_VERBOSE") != "",
	}
	if tweak != nil {
		tweak(&cfg)
	}
	p, err := faulttest.StartWorker(os.Args[0], []string{"-test.run=^$"}, cfg, os.Stderr)
	if err != nil {
		cl.t.Fatal(err)
	}
	cl.procs.Add(p)
	if _, err := p.WaitLine("ready", 20*time.Second); err != nil {
		cl.t.Fatal(err)
	}
	return p
}

// trigger triggers taskName with in, recording it, and remembers the run.
func (cl *cluster) trigger(ctx context.Context, taskName string, in faulttest.Input) (string, error) {
	def := cl.defs[taskName]
	raw, _ := json.Marshal(in)
	key := ""
	if p, ok := faulttest.KeyPrefix[taskName]; ok {
		key = p + in.Key
		cl.mu.Lock()
		cl.keys[key] = true
		cl.mu.Unlock()
	}
	id, err := cl.rec.Trigger(history.Op{Task: taskName, Key: key, Token: in.Op}, func() (string, error) {
		h, err := cl.c.TriggerJSON(ctx, def, raw)
		if err != nil {
			return "", err
		}
		return h.ID(), nil
	})
	if err == nil {
		cl.mu.Lock()
		cl.runs = append(cl.runs, id)
		cl.mu.Unlock()
	}
	return id, err
}

// waitAll waits until every run a trigger returned has ended and returns
// their final states.
func (cl *cluster) waitAll(timeout time.Duration) map[string]*client.RunInfo {
	cl.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cl.mu.Lock()
	runs := append([]string(nil), cl.runs...)
	cl.mu.Unlock()
	out := make(map[string]*client.RunInfo, len(runs))
	for _, id := range runs {
		info, err := cl.c.Handle(id).Wait(ctx)
		if err != nil {
			if os.Getenv("TASKQ_FAULT_VERBOSE") != "" {
				cl.procs.Quit()
				time.Sleep(time.Second)
			}
			cl.t.Fatalf("run %s did not end within %s: %v\n%s", id, timeout, err, cl.dump(id))
		}
		out[id] = info
	}
	return out
}

// dump describes a run's record and queues, for failure messages.
func (cl *cluster) dump(id string) string {
	ctx := context.Background()
	k := redisstore.StoreOf(clientlink.Store(cl.c)).Keys()
	rec, _ := cl.rdb.HGetAll(ctx, k.Run(id)).Result()
	delete(rec, "input")
	score, rerr := cl.rdb.ZScore(ctx, k.Retry(), id).Result()
	s := fmt.Sprintf("record: %v\nretry zset: %v (%v)\n", rec, score, rerr)
	if t := rec["task"]; t != "" {
		pend, _ := cl.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: k.Stream(t), Group: "taskq", Start: "-", End: "+", Count: 100}).Result()
		entries, _ := cl.rdb.XRange(ctx, k.Stream(t), "-", "+").Result()
		s += fmt.Sprintf("stream entries: %v\npending: %v\n", entries, pend)
	}
	for _, op := range cl.opsFor(id) {
		s += op.String() + "\n"
	}
	return s
}

func (cl *cluster) opsFor(id string) []history.Op {
	ops, _ := history.ReadDir(cl.dir)
	var out []history.Op
	for _, op := range ops {
		if op.RunID == id || op.Result.RunID == id {
			out = append(out, op)
		}
	}
	return out
}

// check reads back every run and key, stops the workers, and checks the
// whole history.
func (cl *cluster) check() ([]history.Op, *history.Report) {
	cl.t.Helper()
	ctx := context.Background()
	cl.mu.Lock()
	keys := make([]string, 0, len(cl.keys))
	for k := range cl.keys {
		keys = append(keys, k)
	}
	cl.mu.Unlock()
	ids, err := redisstore.StoreOf(clientlink.Store(cl.c)).ListRunIDs(ctx, 0, 1<<20)
	if err != nil {
		cl.t.Fatal(err)
	}
	if err := history.ReadRuns(ctx, cl.rec, redisstore.StoreOf(clientlink.Store(cl.c)), ids); err != nil {
		cl.t.Fatal(err)
	}
	if err := history.ReadKeys(ctx, cl.rec, redisstore.StoreOf(clientlink.Store(cl.c)), keys); err != nil {
		cl.t.Fatal(err)
	}
	ops, err := history.ReadDir(cl.dir)
	if err != nil {
		cl.t.Fatal(err)
	}
	rep := history.Check(ops, history.Options{Timeout: 20 * time.Second, VisualizeDir: filepath.Join(cl.dir, "illegal")})
	return ops, rep
}

// opsOf returns the operations of one process.
func opsOf(t *testing.T, dir, process string) []history.Op {
	t.Helper()
	ops, err := history.ReadFiles(filepath.Join(dir, process+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return ops
}

// eventually polls cond every 20ms for up to d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
