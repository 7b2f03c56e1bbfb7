package faulttest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/faulttest"
	"github.com/taskq/taskq/pkg/client"
)

// loadOptions shape a burst of triggers from several goroutines: unique
// and shared keys, all four tasks, some runs failing once before they
// succeed, some held until cancelled.
type loadOptions struct {
	clients, perClient int
	sharedKeys         int           // every other trigger uses one of these keys
	pause              time.Duration // between triggers of one goroutine
	cancels            bool          // every ninth run holds until the client cancels it
}

// load runs the burst; fired counts triggers made so far.
func load(ctx context.Context, cl *cluster, o loadOptions, fired *atomic.Int64) (accepted, failed *atomic.Int64) {
	accepted, failed = new(atomic.Int64), new(atomic.Int64)
	tasks := []string{faulttest.TaskStatus, faulttest.TaskTTL, faulttest.TaskRetain, faulttest.TaskPlain, faulttest.TaskDebounce}
	var wg sync.WaitGroup
	for g := 0; g < o.clients; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < o.perClient; i++ {
				n := fired.Add(1)
				in := faulttest.Input{Op: fmt.Sprintf("c%d-%d", g, i), Key: fmt.Sprintf("u%d-%d", g, i)}
				if o.sharedKeys > 0 && i%2 == 0 {
					in.Key = fmt.Sprintf("shared%d", int(n)%o.sharedKeys)
				}
				hold := o.cancels && i%9 == 4
				switch {
				case hold:
					in.Mode = faulttest.ModeHold
				case i%5 == 1:
					in.Mode, in.FailTimes = faulttest.ModeFlaky, 1
				case i%5 == 2:
					in.Mode, in.SleepMs = faulttest.ModeSleep, 30
				}
				tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				id, err := cl.trigger(tctx, tasks[(g+i)%len(tasks)], in)
				cancel()
				switch {
				case err == nil:
					accepted.Add(1)
					if hold {
						wg.Add(1)
						go func() { defer wg.Done(); cancelSoon(ctx, cl, id) }()
					}
				case !isCollision(err):
					failed.Add(1)
				}
				time.Sleep(o.pause)
			}
		}()
	}
	wg.Wait()
	return accepted, failed
}

// cancelSoon cancels a run after a moment, trying again while Redis is
// unreachable.
func cancelSoon(ctx context.Context, cl *cluster, id string) {
	time.Sleep(100 * time.Millisecond)
	for try := 0; try < 30; try++ {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := cl.c.Handle(id).Cancel(cctx)
		cancel()
		if err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func isCollision(err error) bool {
	_, ok := err.(*client.IdempotencyCollisionError)
	return ok
}

// Redis (AOF, appendfsync always) is killed and restarted in the middle of
// a burst of triggers. Every trigger that returned a run ID runs to
// success: the workers and the client reconnect by themselves.
func TestRedisRestartDuringBurst(t *testing.T) {
	t.Parallel()
	cl := newCluster(t, faulttest.TaskConfig{})
	cl.worker(nil)
	cl.worker(nil)
	ctx := context.Background()

	var fired atomic.Int64
	done := make(chan struct{})
	var accepted, failed *atomic.Int64
	go func() {
		defer close(done)
		accepted, failed = load(ctx, cl, loadOptions{clients: 4, perClient: 60, pause: 10 * time.Millisecond}, &fired)
	}()
	eventually(t, 10*time.Second, "a quarter of the burst", func() bool { return fired.Load() >= 60 })
	cl.srv.Kill()
	time.Sleep(2500 * time.Millisecond) // down longer than a trigger waits (2s)
	cl.srv.Start()
	if n := fired.Load(); n >= 240 {
		t.Fatalf("the burst was over (%d triggers) before Redis came back", n)
	}
	<-done

	infos := cl.waitAll(20 * time.Second)
	t.Logf("%d triggers, %d returned a run ID, %d failed while Redis was down", fired.Load(), accepted.Load(), failed.Load())
	if accepted.Load() < 100 {
		t.Fatalf("only %d of %d triggers were accepted", accepted.Load(), fired.Load())
	}
	for id, info := range infos {
		if info.Status != client.StatusSucceeded {
			t.Errorf("run %s ended %s (%s); want succeeded", id, info.Status, info.Error)
		}
	}
	_, rep := cl.check()
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
}
