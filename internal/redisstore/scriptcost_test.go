//go:build scriptcost

package redisstore_test

// The scripts' cost in Redis, counted in instructions rather than time:
// redis-server runs under valgrind's callgrind, which counts the
// instructions it executes for each phase of a run's life. The count is
// the same from one run to the next whatever else the machine is doing,
// so a change to a script shows its effect in one run where timings on a
// shared machine need many. Run it with "make script-cost" (valgrind must
// be installed); it is not part of "make test". The server is one of the
// test's own (redistest.StartServerUnder), never the shared one.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// callgrindServer is redis-server under callgrind, with instrumentation
// off until a phase is measured.
type callgrindServer struct {
	t    *testing.T
	srv  *redistest.Server
	out  string // callgrind's output file; dumps get .1, .2, ...
	rdb  *redis.Client
	dump int
}

func startCallgrind(t *testing.T) *callgrindServer {
	t.Helper()
	if _, err := exec.LookPath("callgrind_control"); err != nil {
		t.Fatalf("valgrind (with callgrind_control) is needed to count the scripts' instructions: %v", err)
	}
	// TASKQ_CALLGRIND_DIR keeps the dumps, one per phase, for
	// callgrind_annotate (--inclusive=yes shows where a phase's
	// instructions go).
	dir := os.Getenv("TASKQ_CALLGRIND_DIR")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &callgrindServer{t: t, out: filepath.Join(dir, "callgrind.out")}
	// No persistence: writing the AOF would count too.
	s.srv = redistest.StartServerUnder(t,
		[]string{"valgrind", "--tool=callgrind", "--instr-atstart=no", "--callgrind-out-file=" + s.out},
		"--appendonly", "no")
	s.rdb = redis.NewClient(&redis.Options{Addr: s.srv.Addr(), ReadTimeout: time.Minute})
	t.Cleanup(func() { _ = s.rdb.Close() })
	return s
}

func (s *callgrindServer) control(args ...string) {
	s.t.Helper()
	args = append(args, strconv.Itoa(s.srv.Pid()))
	if out, err := exec.Command("callgrind_control", args...).CombinedOutput(); err != nil {
		s.t.Fatalf("callgrind_control %v: %v\n%s", args, err, out)
	}
}

// measure counts the instructions redis-server executes while fn runs,
// named name in the log.
func (s *callgrindServer) measure(name string, fn func()) int64 {
	s.t.Helper()
	s.control("-i", "on")
	fn()
	s.control("-i", "off")
	s.control("-d")
	s.dump++
	file := fmt.Sprintf("%s.%d", s.out, s.dump)
	deadline := time.Now().Add(time.Minute)
	for {
		if n, ok := redistest.CallgrindTotal(file); ok {
			s.t.Logf("%s: %s", name, file)
			return n
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no callgrind dump in %s", file)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestScriptCost counts, per run, the instructions of each script call in
// a run's life, batched as the client and worker batch them (16 per
// call): triggering, reading the delivery, and recording the outcome of an
// attempt begun with it (a short run) or begun first by start.lua (a run
// still going after the worker's StartDelay).
func TestScriptCost(t *testing.T) {
	const n, batch = 2000, 16
	s := startCallgrind(t)
	ctx := context.Background()
	st := redisstore.New(s.rdb, "cost")
	if err := st.EnsureGroup(ctx, "noop"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	trigger := func(from, to int) {
		ps := make([]*engine.EnqueueParams, 0, to-from)
		for i := from; i < to; i++ {
			id := fmt.Sprintf("run-%06d", i)
			ps = append(ps, &engine.EnqueueParams{RunID: id, Task: "noop", Input: []byte(`{"id":"` + id + `"}`),
				Meta: []byte(`{}`), Key: "order-" + id, Strategy: engine.StrategyStatus, Hold: time.Hour,
				MaxDeliveries: 10, Retention: 24 * time.Hour, Now: now})
		}
		res, errs := st.EnqueueBatch(ctx, ps)
		for i := range ps {
			if errs[i] != nil || !res[i].Accepted {
				t.Fatalf("trigger %d: %+v, %v", from+i, res[i], errs[i])
			}
		}
	}
	var ds []engine.Delivery
	read := func() {
		got, err := st.ReadGroup(ctx, 0, "w1", []string{"noop"}, batch, -1)
		if err != nil || len(got) == 0 {
			t.Fatalf("read: %d deliveries, %v", len(got), err)
		}
		ds = append(ds, got...)
	}
	outcome := func(d engine.Delivery, attempt int, began bool) *engine.FinishParams {
		p := &engine.FinishParams{RunID: d.RunID, Attempt: attempt, Outcome: engine.OutcomeSucceeded,
			Payload: []byte(`{}`), Now: now, Task: d.Task, EntryID: d.EntryID, Spec: d.Spec}
		if began {
			p.Began, p.Consumer = now, "w1"
		}
		return p
	}
	finish := func(ps []*engine.FinishParams) {
		res, errs := st.FinishBatch(ctx, ps)
		for i := range ps {
			if errs[i] != nil || !res[i].Written {
				t.Fatalf("finish %s: %+v, %v", ps[i].RunID, res[i], errs[i])
			}
		}
	}
	// Scripts are loaded (EVAL, then cached) before anything is counted.
	trigger(-1, 0)
	read()
	finish([]*engine.FinishParams{outcome(ds[0], 1, true)})
	ds = ds[:0]
	trigger(-2, -1)
	read()
	if _, errs := st.StartBatch(ctx, "w1", now, ds); errs[0] != nil {
		t.Fatal(errs[0])
	}
	ds = ds[:0]

	perRun := func(total int64, runs int) float64 { return float64(total) / float64(runs) }
	enq := s.measure("trigger", func() {
		for i := 0; i < 2*n; i += batch {
			trigger(i, i+batch)
		}
	})
	rd := s.measure("read", func() {
		for len(ds) < 2*n {
			read()
		}
	})
	short, long := ds[:n], ds[n:]
	withOutcome := s.measure("finish, begun with its outcome", func() {
		for i := 0; i < n; i += batch {
			ps := make([]*engine.FinishParams, 0, batch)
			for _, d := range short[i : i+batch] {
				ps = append(ps, outcome(d, d.Spec.Attempts+1, true))
			}
			finish(ps)
		}
	})
	var attempts []int
	start := s.measure("start", func() {
		for i := 0; i < n; i += batch {
			res, errs := st.StartBatch(ctx, "w1", now, long[i:i+batch])
			for j := range res {
				if errs[j] != nil || !res[j].Started {
					t.Fatalf("start: %+v, %v", res[j], errs[j])
				}
				attempts = append(attempts, res[j].Attempt)
			}
		}
	})
	afterStart := s.measure("finish after start", func() {
		for i := 0; i < n; i += batch {
			ps := make([]*engine.FinishParams, 0, batch)
			for j, d := range long[i : i+batch] {
				ps = append(ps, outcome(d, attempts[i+j], false))
			}
			finish(ps)
		}
	})

	// One outcome per call, as a worker that reads a few runs at a time
	// sends them (a quiet queue, or a partition of many): what a call
	// costs whatever it carries weighs on each run.
	const single = 500
	triggerAlone := s.measure("trigger, one per call", func() {
		for i := 2 * n; i < 2*n+single; i++ {
			trigger(i, i+1)
		}
	})
	for len(ds) < 2*n+single {
		read()
	}
	alone := s.measure("finish, one outcome per call", func() {
		for _, d := range ds[2*n:] {
			finish([]*engine.FinishParams{outcome(d, d.Spec.Attempts+1, true)})
		}
	})

	// Triggers without a key (strategy none), in calls of 16: nothing to
	// claim, and no key field written.
	keyless := s.measure("trigger without a key", func() {
		for i := 0; i+batch <= single; i += batch {
			ps := make([]*engine.EnqueueParams, 0, batch)
			for j := i; j < i+batch; j++ {
				id := fmt.Sprintf("plain-%06d", j)
				ps = append(ps, &engine.EnqueueParams{RunID: id, Task: "noop", Input: []byte(`{"id":"` + id + `"}`),
					Meta: []byte(`{}`), Strategy: engine.StrategyNone, MaxDeliveries: 10, Retention: 24 * time.Hour,
					Now: now})
			}
			res, errs := st.EnqueueBatch(ctx, ps)
			for j := range ps {
				if errs[j] != nil || !res[j].Accepted {
					t.Fatalf("keyless trigger %d: %+v, %v", i+j, res[j], errs[j])
				}
			}
		}
	})

	// The same where the deliveries are spread over 100 workers, each a
	// consumer of the group: what a call reads of the group must not grow
	// with the workers.
	const workers = 100
	trigger(2*n+single, 2*n+2*single)
	var spread []engine.Delivery
	for w := 0; len(spread) < single; w = (w + 1) % workers {
		got, err := st.ReadGroup(ctx, 0, fmt.Sprintf("w%d", w), []string{"noop"}, single/workers, -1)
		if err != nil || len(got) == 0 {
			t.Fatalf("read for worker %d: %d deliveries, %v", w, len(got), err)
		}
		spread = append(spread, got...)
	}
	many := s.measure("finish, one outcome per call, 100 workers", func() {
		for _, d := range spread {
			finish([]*engine.FinishParams{outcome(d, d.Spec.Attempts+1, true)})
		}
	})

	// The read a worker makes while runs of a priority above the default
	// wait (read.lua: the lanes in turn, the highest first), here of runs
	// of the default priority alone, in calls of 16.
	trigger(2*n+2*single, 2*n+3*single)
	byPriority := s.measure("read by priority", func() {
		for got := 0; got < single; {
			ds, _, err := st.ReadByPriority(ctx, 0, "w1", []string{"noop"}, batch, engine.PriorityBound)
			if err != nil || len(ds) == 0 {
				t.Fatalf("read by priority: %d deliveries, %v", len(ds), err)
			}
			got += len(ds)
		}
	})

	e, r, f := perRun(enq, 2*n), perRun(rd, 2*n), perRun(withOutcome, n)
	t.Logf("instructions per run in redis-server, %d runs, %d per call:", n, batch)
	t.Logf("  trigger (enqueue.lua)                  %8.0f", e)
	t.Logf("  read (XREADGROUP)                      %8.0f", r)
	t.Logf("  read by priority (read.lua)            %8.0f", perRun(byPriority, single))
	t.Logf("  finish, begun with its outcome         %8.0f", f)
	t.Logf("  start (start.lua)                      %8.0f", perRun(start, n))
	t.Logf("  trigger, one per call                  %8.0f", perRun(triggerAlone, single))
	t.Logf("  trigger without a key                  %8.0f", perRun(keyless, single-single%batch))
	t.Logf("  finish after start                     %8.0f", perRun(afterStart, n))
	t.Logf("  finish, one outcome per call           %8.0f", perRun(alone, single))
	t.Logf("  the same, deliveries of 100 workers    %8.0f", perRun(many, single))
	t.Logf("  short run processed / triggered        %8.2f", (r+f)/e)
}

// TestEventScriptCost counts the instructions redis-server executes per
// pushed event with three subscribed tasks, each creating a run: at once
// (push_event.lua), as a namespace of one partition pushes every event,
// and in steps (store_event.lua, one trigger_event.lua call for the three
// tasks, record_event.lua), as an event whose runs live in other
// partitions is pushed.
func TestEventScriptCost(t *testing.T) {
	const n, tasks = 1000, 3
	s := startCallgrind(t)
	ctx := context.Background()
	atOnce := redisstore.New(s.rdb, "cost")
	inSteps := redisstore.New(s.rdb, "cost")
	inSteps.SetFanoutHooks(&engine.FanoutHooks{Steps: true})
	now := time.Now()
	push := func(st *redisstore.Store, i int) {
		if _, err := st.PushEvent(ctx, eventPush(i, tasks, now)); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
	}
	// The scripts are loaded before anything is counted.
	push(atOnce, -1)
	push(inSteps, -2)
	one := s.measure("event push at once", func() {
		for i := 0; i < n; i++ {
			push(atOnce, i)
		}
	})
	steps := s.measure("event push in steps", func() {
		for i := n; i < 2*n; i++ {
			push(inSteps, i)
		}
	})
	t.Logf("instructions per event in redis-server, %d events of %d tasks:", n, tasks)
	t.Logf("  push at once (push_event.lua)          %8.0f", float64(one)/n)
	t.Logf("  push in steps (3 calls)                %8.0f", float64(steps)/n)
}
