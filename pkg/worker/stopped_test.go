package worker_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// A worker dialled from a URL heeds its calls' deadlines as a client does:
// with Redis stopped (SIGSTOP: connections stay open, nothing answers) and
// a handler running, Shutdown returns within about FetchBlock +
// ShutdownTimeout + a few OperationTimeouts (the blocked read of the
// streams, the handler's grace, giving its run back, a duty's last call).
// The worker's connections used go-redis's default timeouts, which let
// the blocked read run 10s past its block and the give-back retry several
// 3s reads.
func TestShutdownIsBoundedWhileRedisIsStopped(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ns := redistest.Namespace(t)
	const (
		opTimeout = 500 * time.Millisecond
		fetch     = 200 * time.Millisecond
		grace     = 200 * time.Millisecond
	)
	c, err := client.New(client.Options{RedisURL: srv.URL(), Namespace: ns, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := worker.New(worker.Options{
		RedisURL: srv.URL(), Namespace: ns, Logger: quiet, OperationTimeout: opTimeout,
		FetchBlock: fetch, ShutdownTimeout: grace, LeaseDuration: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	tk := task.Must[in, out]("stopped-shutdown", task.Options{})
	running := make(chan struct{}, 1)
	worker.Handle(w, tk, func(ctx worker.Context, x in) (out, error) {
		running <- struct{}{}
		<-ctx.Done()
		return out{}, context.Cause(ctx)
	})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RunNoWait(context.Background(), c, tk, in{ID: "1"}); err != nil {
		t.Fatal(err)
	}
	receive(t, "the handler to run", running)
	if err := syscall.Kill(srv.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = syscall.Kill(srv.Pid(), syscall.SIGCONT) }()
	time.Sleep(fetch) // the fetch loop is blocked reading the streams now

	start := time.Now()
	_ = w.Shutdown(context.Background())
	took := time.Since(start)
	// Generous for a loaded machine: unbounded calls take over 10s.
	if limit := fetch + grace + 4*opTimeout + time.Second; took > limit {
		t.Fatalf("Shutdown with Redis stopped took %s; want at most %s", took.Round(time.Millisecond), limit)
	}
}
