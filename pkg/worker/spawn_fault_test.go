package worker_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// faultChildren is how many children the fault test's parent spawns.
const faultChildren = 100

var (
	faultParent = task.Must[in, int]("fault-parent", task.Options{})
	faultChild  = task.Must[childIn, int]("fault-child", task.Options{})
)

// gateKey is the key that lets the fault test's children end once set.
func gateKey(ns string) string { return "taskq:{" + ns + "}:test:gate" }

// spawnerWorker is a worker process (see TestMain) whose parent spawns
// faultChildren children one by one, printing "spawned <i>" after each,
// then "waiting", then waits for them all and prints "finished <sum>";
// each child waits for the gate key, then returns its number. It has a
// slot for every child and the parent: children that wait hold theirs.
func spawnerWorker() int {
	conn, err := connect.Open(connect.Options{URL: os.Getenv(workerURLEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rdb, ns := conn.Redis, os.Getenv(workerNSEnv)
	w, err := worker.New(worker.Options{Redis: rdb, Namespace: ns, LeaseDuration: time.Second, Concurrency: 2 * faultChildren, Logger: quiet,
		FetchBlock: 200 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	_ = worker.Handle(w, faultChild, func(ctx worker.Context, x childIn) (int, error) {
		for {
			if n, err := rdb.Exists(ctx, gateKey(ns)).Result(); err == nil && n == 1 {
				return x.N, nil
			}
			select {
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	_ = worker.Handle(w, faultParent, func(ctx worker.Context, _ in) (int, error) {
		refs := make([]*client.RunRef[int], faultChildren)
		for i := range refs {
			ref, err := worker.Spawn(ctx, faultChild, childIn{N: i})
			if err != nil {
				return 0, err
			}
			refs[i] = ref
			say("spawned %d %d", ctx.Attempt(), i)
		}
		say("waiting %d", ctx.Attempt())
		results, err := client.WaitAll(ctx, refs)
		if err != nil {
			return 0, err
		}
		sum := 0
		for _, r := range results {
			sum += r
		}
		say("finished %d %d", ctx.Attempt(), sum)
		return sum, nil
	})
	if err := w.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// nextLine returns the next line the helper prints that starts with
// prefix.
func (h *helperWorker) nextLine(prefix string) []string {
	h.t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case l := <-h.lines:
			if strings.HasPrefix(l, prefix) {
				return strings.Fields(l)
			}
		case <-deadline:
			h.t.Fatalf("helper worker did not print %q", prefix)
		}
	}
}

// A parent whose worker process is SIGKILLed while it spawns 100 children,
// and again while it waits for them, finishes once on a third worker: each
// child exists once, under its position, knowing its parent.
func TestParentKilledWhileSpawningAndWaitingMakesEachChildOnce(t *testing.T) {
	t.Parallel()
	redistest.EachReal(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		first := startHelperWorker(t, "spawner", b)
		ref, err := client.RunNoWait(ctx, c, faultParent, in{ID: "p"})
		if err != nil {
			t.Fatal(err)
		}
		first.nextLine("spawned 1 30")
		first.Kill()

		second := startHelperWorker(t, "spawner", b)
		second.nextLine("waiting 2")
		second.Kill()

		if err := b.Client.Set(ctx, gateKey(b.Namespace), "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		third := startHelperWorker(t, "spawner", b)
		if f := third.nextLine("finished"); f[1] != "3" || f[2] != fmt.Sprint(faultChildren*(faultChildren-1)/2) {
			t.Fatalf("third worker said %v, want attempt 3 and the sum of 0..%d", f, faultChildren-1)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		sum, err := ref.Result(wctx)
		if err != nil || sum != faultChildren*(faultChildren-1)/2 {
			t.Fatalf("parent = %d, %v", sum, err)
		}
		info, err := c.Inspector().GetRun(ctx, ref.ID())
		if err != nil {
			t.Fatal(err)
		}
		if info.Attempt != 3 || len(info.Children) != faultChildren {
			t.Fatalf("parent: attempt %d, %d children; want 3 and %d", info.Attempt, len(info.Children), faultChildren)
		}
		seen := map[string]bool{}
		for i, ch := range info.Children {
			if ch.Name != engine.PositionName(i) || ch.Status != client.StatusSucceeded || seen[ch.RunID] {
				t.Fatalf("child %d: %+v", i, ch)
			}
			seen[ch.RunID] = true
		}
		page, err := c.Inspector().ListRuns(ctx, client.ListOptions{Task: faultChild.Name(), Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) != faultChildren {
			t.Fatalf("%d child runs, want %d", len(page.Items), faultChildren)
		}
		for _, r := range page.Items {
			if !seen[r.ID] || r.Parent != ref.ID() || r.Status != client.StatusSucceeded {
				t.Fatalf("child run %s: parent %q, %s; recorded %v", r.ID, r.Parent, r.Status, seen[r.ID])
			}
		}
		// The parent succeeded once: the third worker's line, and no
		// other worker lived to print one.
		if st, err := runStatus(ctx, ref); err != nil || st != client.StatusSucceeded {
			t.Fatalf("parent is %s, %v", st, err)
		}
	})
}
