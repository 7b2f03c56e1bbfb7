package worker_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// With Redis stopped (SIGSTOP: connections open, nothing answers) or
// killed while a handler runs, Shutdown cannot give the run back. It still
// returns within ShutdownTimeout, with a *ShutdownError naming the run; once
// Redis is back, the run is delivered again when its lease ends, and
// completes.
func TestShutdownNamesTheRunsItCouldNotGiveBack(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"stopped", "killed"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			srv := redistest.StartServer(t)
			ns := redistest.Namespace(t)
			const (
				shutdown = time.Second
				lease    = 2 * time.Second
			)
			c, err := client.New(client.Options{RedisURL: srv.URL(), Namespace: ns, Logger: quiet, OperationTimeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tk := task.Must[in, out]("shutdown-left", task.Options{})
			newWorker := func(handler func(worker.Context, in) (out, error)) *worker.Worker {
				w, err := worker.New(worker.Options{
					RedisURL: srv.URL(), Namespace: ns, Logger: quiet, OperationTimeout: 500 * time.Millisecond,
					FetchBlock: 100 * time.Millisecond, ShutdownTimeout: shutdown, LeaseDuration: lease, StartDelay: -1,
				})
				if err != nil {
					t.Fatal(err)
				}
				if err := worker.Handle(w, tk, handler); err != nil {
					t.Fatal(err)
				}
				if err := w.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				return w
			}
			running := make(chan struct{}, 1)
			w := newWorker(func(ctx worker.Context, x in) (out, error) {
				running <- struct{}{}
				<-ctx.Done()
				return out{}, context.Cause(ctx)
			})
			h, err := client.RunNoWait(context.Background(), c, tk, in{ID: "1"})
			if err != nil {
				t.Fatal(err)
			}
			receive(t, "the handler to run", running)

			switch fault {
			case "stopped":
				if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
					t.Fatal(err)
				}
				defer func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) }()
			case "killed":
				srv.Kill()
			}
			start := time.Now()
			err = w.Shutdown(context.Background())
			took := time.Since(start)
			var se *worker.ShutdownError
			if !errors.As(err, &se) {
				t.Fatalf("Shutdown with Redis %s returned %v; want a *worker.ShutdownError", fault, err)
			}
			if !slices.ContainsFunc(se.Runs, func(r worker.ShutdownRun) bool { return r.ID == h.ID() }) || !strings.Contains(err.Error(), h.ID()) ||
				!strings.Contains(err.Error(), "delivered again") {
				t.Fatalf("the error does not name run %s or say it comes back: %v", h.ID(), err)
			}
			// A guard against a hang, not a timing: before, it took the
			// retries of the outcome until the lease lapsed.
			if limit := shutdown + 2*time.Second; took > limit {
				t.Fatalf("Shutdown with Redis %s took %s; ShutdownTimeout is %s", fault, took.Round(time.Millisecond), shutdown)
			}

			switch fault {
			case "stopped":
				_ = syscall.Kill(srv.Pid(), syscall.SIGCONT)
			case "killed":
				srv.Start()
			}
			w2 := newWorker(func(ctx worker.Context, x in) (out, error) { return out{ID: x.ID}, nil })
			defer w2.Shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			info, err := h.Wait(ctx)
			if err != nil || info.Status != client.StatusSucceeded {
				t.Fatalf("the run left behind did not complete once Redis was back: %+v, %v", info, err)
			}
		})
	}
}
