package faulttest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/internal/history"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/pkg/client"
)

// A worker stopped with SIGSTOP past its lease wakes to find its run
// redelivered and finished by another worker, and the key taken by a newer
// run. Its late completion is refused (fenced by the attempt number): the
// result stays the second attempt's and the key stays with the newer run.
//
// "before finish": the worker stops itself just before sending its
// outcome, so the late write certainly reaches Redis. "mid handler": the
// test stops it from outside while its handler runs; on waking, its
// heartbeat may see the lost lease first, and then it writes nothing.
func TestPausedWorkerIsFencedOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		beforeFinish bool
	}{{"before finish", true}, {"mid handler", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cl := newCluster(t, faulttest.TaskConfig{})
			ctx := context.Background()
			a := cl.worker(func(c *faulttest.WorkerConfig) { c.PauseBeforeFinish = tc.beforeFinish })

			in := faulttest.Input{Op: "first", Key: "k", Mode: faulttest.ModeSleep, SleepMs: 200}
			runID, err := cl.trigger(ctx, faulttest.TaskStatus, in)
			if err != nil {
				t.Fatal(err)
			}
			if f, err := a.WaitLine("started "+runID, 10*time.Second); err != nil || f[0] != "1" {
				t.Fatalf("worker A did not start attempt 1: %v %v", f, err)
			}
			if tc.beforeFinish {
				if _, err := a.WaitLine("pausing "+runID, 10*time.Second); err != nil {
					t.Fatal(err)
				}
			} else if err := a.Pause(); err != nil {
				t.Fatal(err)
			}

			// B takes the run over once A's one-second lease has lapsed.
			b := cl.worker(nil)
			if f, err := b.WaitLine("started "+runID, 10*time.Second); err != nil || f[0] != "2" {
				t.Fatalf("worker B did not start attempt 2: %v %v\n%s", f, err, cl.dump(runID))
			}
			wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			first, err := cl.c.Handle(runID).Wait(wctx)
			if err != nil || first.Status != client.StatusSucceeded {
				t.Fatalf("run after B: %+v %v", first, err)
			}
			// The key was released when B finished: a newer run holds it now.
			newer, err := cl.trigger(ctx, faulttest.TaskStatus, faulttest.Input{Op: "newer", Key: "k", Mode: faulttest.ModeHold})
			if err != nil {
				t.Fatalf("trigger after the run ended: %v", err)
			}
			if _, err := b.WaitLine("started "+newer, 10*time.Second); err != nil {
				t.Fatal(err)
			}

			if err := a.Resume(); err != nil {
				t.Fatal(err)
			}
			// A's attempt ends one way or the other: a fenced write, or
			// abandoning the run once the heartbeat says it lost the lease.
			var late *history.Op
			if tc.beforeFinish {
				eventually(t, 10*time.Second, "worker A's late finish", func() bool {
					for _, op := range opsOf(t, cl.dir, "w1") {
						if op.Kind == history.KindFinish && op.RunID == runID && op.Return != 0 {
							late = &op
							return true
						}
					}
					return false
				})
				if late.Attempt != 1 || late.Result.Code != history.CodeRefused || late.Result.Status != "stale" {
					t.Fatalf("late finish of attempt 1: %s; want refused as stale", late)
				}
			} else {
				time.Sleep(time.Second) // let A wake and act
				for _, op := range opsOf(t, cl.dir, "w1") {
					if op.Kind == history.KindFinish && op.RunID == runID && op.Result.Code == history.CodeOK {
						t.Fatalf("paused worker wrote its outcome: %s", &op)
					}
				}
			}

			info, err := cl.c.Inspector().GetRun(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			var out faulttest.Output
			_ = json.Unmarshal(info.Result, &out)
			if info.Status != client.StatusSucceeded || info.Attempt != 2 || out.Worker != "w2" || out.Attempt != 2 {
				t.Fatalf("run after A woke: status %s attempt %d result %s; want B's attempt 2", info.Status, info.Attempt, info.Result)
			}
			ks, held, err := redisstore.StoreOf(clientlink.Store(cl.c)).GetKey(ctx, "s:k")
			if err != nil || !held || ks.Owner != newer {
				t.Fatalf("key after A woke: %+v held=%v err=%v; want it held by the newer run %s", ks, held, err, newer)
			}

			// End the newer run and check the whole history.
			if st, err := cl.c.Handle(newer).Cancel(ctx); err != nil || st != client.StatusCancelled {
				t.Fatalf("cancel newer run: %s %v", st, err)
			}
			cl.waitAll(10 * time.Second)
			_, rep := cl.check()
			if err := rep.Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
