package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// A waiter that cannot ask for the run's completion notice (Redis went away
// between its subscription and its check) gets the client's
// *UnavailableError, as every other call does.
func TestWaitReportsRedisUnavailable(t *testing.T) {
	srv := redistest.StartServer(t)
	hook := &redistest.ScriptFailure{}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	rdb.AddHook(hook)
	t.Cleanup(func() { rdb.Close() })
	c, err := client.New(client.Options{Redis: rdb, Namespace: redistest.Namespace(t), OperationTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tk := task.Must[orderInput, orderResult]("wait-down", task.Options{Idempotency: task.Status(`input.id`, time.Minute)})
	ref, err := client.RunNoWait(context.Background(), c, tk, orderInput{ID: "1"})
	if err != nil {
		t.Fatal(err)
	}
	hook.Broken.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = ref.Result(ctx)
	var ue *client.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, client.ErrUnavailable) {
		t.Fatalf("waiting with Redis gone: %v; want an *UnavailableError", err)
	}
}
