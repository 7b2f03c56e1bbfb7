package faulttest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// With runs waiting durably for a signal on a cluster of three masters
// and three replicas, the master serving the first run's partition is
// killed with SIGKILL and its replica promoted. The signals sent after the
// failover wake every run, on the same worker, which never restarted:
// each run ends once, and the step it completed before its wait does not
// run again.
func TestFailoverDuringADurableWait(t *testing.T) {
	t.Parallel()
	pc := redistest.StartCluster(t, 3, 1)
	r := newFailoverRig(t, pc, "fo-wait", task.Durability{})
	ctx := context.Background()

	tk := task.Must[int, string]("fo-await", task.Options{})
	var before, after atomic.Int32
	wrdb, err := faulttest.Dial(pc.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wrdb.Close() })
	w, err := worker.New(worker.Options{Redis: wrdb, Namespace: r.ns, Logger: quiet, LeaseDuration: 2 * time.Second,
		OperationTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	worker.Handle(w, tk, func(ctx worker.Context, n int) (string, error) {
		if _, err := worker.Step(ctx, "before", func(context.Context, string) (int32, error) {
			return before.Add(1), nil
		}); err != nil {
			return "", err
		}
		sig, err := worker.WaitForSignal(ctx, 0)
		if err != nil {
			return "", err
		}
		after.Add(1)
		return fmt.Sprint(n, ":", string(sig.Payload)), nil
	})
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() { stop(); <-done })

	const runs = 30
	refs := make([]*client.RunRef[string], runs)
	for i := range refs {
		if refs[i], err = client.RunNoWait(ctx, r.c, tk, i); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "every run waiting", func() bool {
		for _, ref := range refs {
			info, err := r.c.Inspector().GetRun(ctx, ref.ID())
			if err != nil || info.Status != client.StatusWaiting {
				return false
			}
		}
		return true
	})
	// Every master's replica holds the waits before the kill: what is
	// tested is the wake after a failover, not Redis's asynchronous
	// replication.
	for _, n := range pc.Nodes[:pc.Masters] {
		c := redis.NewClient(&redis.Options{Addr: n.Addr()})
		if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	part, _ := engine.RunPartition(refs[0].ID())
	victim := r.masterOf(part)
	r.killMaster(victim)

	for i, ref := range refs {
		eventually(t, recoveryBound, fmt.Sprint("the signal to run ", i), func() bool {
			_, err := ref.Signal(ctx, "go")
			return err == nil
		})
	}
	for i, ref := range refs {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := ref.Result(rctx)
		cancel()
		if err != nil || res != fmt.Sprint(i, `:"go"`) {
			t.Fatalf("run %d = %q, %v", i, res, err)
		}
	}
	if b, a := before.Load(), after.Load(); b != runs || a != runs {
		t.Fatalf("the step before the wait ran %d times, the code after it %d; want %d each", b, a, runs)
	}
}
