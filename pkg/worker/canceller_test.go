package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/connect"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// Start returns only once the subscription is in place: a notice published
// right after it reaches a subscriber, and cancels the run it names with
// the cause it gives. After Stop nobody listens on the channel any more.
func TestCancellerStartReturnsOnceSubscribed(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	ctx := context.Background()
	active := newActiveRuns()
	_, cancelled := testRun(active, "r1", true, time.Now().Add(time.Minute))
	_, superseded := testRun(active, "r2", true, time.Now().Add(time.Minute))
	c := &canceller{sub: connect.Engine(b.Client, b.Namespace), channels: []string{"cancels"}, active: active, opTimeout: time.Second, log: discard}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.Client.Publish(ctx, "cancels", "r1").Val(); n != 1 {
		t.Fatalf("the notice right after Start reached %d subscribers, want 1", n)
	}
	b.Client.Publish(ctx, "cancels", "r2|r3")
	b.Client.Publish(ctx, "cancels", "not-here")
	for _, w := range []struct {
		ctx  context.Context
		want error
	}{{cancelled, task.ErrRunCancelled}, {superseded, &client.RunError{RunID: "r2", Status: client.StatusCancelled, Message: cancelreason.Superseded("r3"), By: "r3"}}} {
		select {
		case <-w.ctx.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("a notice did not cancel its run")
		}
		if got := context.Cause(w.ctx); got.Error() != w.want.Error() || !errors.Is(got, task.ErrRunCancelled) {
			t.Fatalf("cause %v, want %v", got, w.want)
		}
	}
	within(t, "Stop", c.Stop)
	deadline := time.Now().Add(5 * time.Second)
	for b.Client.Publish(ctx, "cancels", "r1").Val() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("still subscribed after Stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A subscription Redis does not confirm fails Start, naming what failed.
func TestCancellerStartFailsWithoutRedis(t *testing.T) {
	t.Parallel()
	b := redistest.Mini(t)
	b.Mini.Close()
	c := &canceller{sub: connect.Engine(b.Client, b.Namespace), channels: []string{"cancels"}, active: newActiveRuns(), opTimeout: 200 * time.Millisecond, log: discard}
	err := c.Start(context.Background())
	if err == nil {
		c.Stop()
		t.Fatal("Start succeeded with Redis gone")
	}
	if want := "worker: subscribe to cancel notices"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
		t.Fatalf("Start = %v, want it to start with %q", err, want)
	}
	within(t, "Stop after a failed Start", c.Stop)
}
