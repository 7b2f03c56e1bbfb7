package worker_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// slowDial is a go-redis hook that delays every new connection by Delay
// once it is set: a slow network, or a loaded machine.
type slowDial struct{ Delay atomic.Int64 }

func (h *slowDial) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if d := time.Duration(h.Delay.Load()); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return next(ctx, network, addr)
	}
}

func (h *slowDial) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *slowDial) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A cancel made as soon as Start has returned reaches the handler, even
// when the worker's cancel subscription needs a new connection that is
// slow to open: Start returns only once Redis has confirmed it. The worker
// has warm connections for everything else, so its handler runs and the
// cancel is made while that connection is still being opened; before,
// the notice went to nobody, and the handler of the run (not begun yet,
// so left alone by heartbeats) ran on until StartDelay.
func TestCancelRightAfterStartReachesTheHandler(t *testing.T) {
	t.Parallel()
	b := redistest.Real(t)
	ctx := context.Background()
	c := newClient(t, b)
	opt, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatal(err)
	}
	opt.MinIdleConns = 4
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	slow := &slowDial{}
	rdb.AddHook(slow)
	eventually(t, "the worker's connections to open", func() bool { return rdb.PoolStats().IdleConns >= 4 })
	slow.Delay.Store(int64(time.Second))
	wb := *b
	wb.Client = rdb

	tk := task.Must[in, out]("cancel-after-start", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	ref, err := client.RunNoWait(ctx, c, tk, in{ID: "c"})
	if err != nil {
		t.Fatal(err)
	}
	running := make(chan struct{}, 1)
	causes := make(chan error, 1)
	startWorker(t, &wb, worker.Options{StartDelay: 30 * time.Second, LeaseDuration: time.Minute}, func(w *worker.Worker) {
		worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
			running <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return out{}, nil
		})
	})
	receive(t, "the handler to run", running)
	if st, err := ref.Cancel(ctx); err != nil || st != client.StatusCancelled {
		t.Fatalf("cancel: %v %v", st, err)
	}
	if cause := receive(t, "the handler's context to end", causes); !errors.Is(cause, task.ErrRunCancelled) {
		t.Fatalf("handler context cause = %v, want ErrRunCancelled", cause)
	}
}

// A cancel whose notice the worker missed (its subscription was being
// re-established) reaches the handler of an attempt not begun yet at the
// next heartbeat, which reads the run's status as it renews the leases of
// begun attempts, and with the cause the notice would have given. Here the
// run's record is made cancelled, and superseded, as a cancel leaves it,
// without the notice. Before, heartbeats skipped such attempts and the
// handler ran on until StartDelay.
func TestMissedCancelOfQueuedRunReachesItsHandlerAtTheNextHeartbeat(t *testing.T) {
	t.Parallel()
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		c := newClient(t, b)
		tk := task.Must[in, out]("missed-cancel", task.Options{})
		running := make(chan string, 1)
		causes := make(chan error, 1)
		startWorker(t, b, worker.Options{StartDelay: 10 * time.Second, LeaseDuration: 20 * time.Second,
			HeartbeatInterval: 100 * time.Millisecond}, func(w *worker.Worker) {
			worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
				running <- ctx.RunID()
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return out{}, nil
			})
		})
		if _, err := client.RunNoWait(ctx, c, tk, in{ID: "m"}); err != nil {
			t.Fatal(err)
		}
		id := receive(t, "the handler to run", running)
		runKey, err := redispeek.RunRecord(ctx, clientlink.Store(c), id)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Client.HSet(ctx, runKey, "status", "cancelled", "error", "superseded by run newer").Err(); err != nil {
			t.Fatal(err)
		}
		cause := receive(t, "the handler's context to end", causes)
		var se *client.RunError
		if !(errors.As(cause, &se) && se.Group == "") || se.By != "newer" || se.RunID != id {
			t.Fatalf("handler context cause = %v, want a *client.RunError by run newer", cause)
		}
	})
}
