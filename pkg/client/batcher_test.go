package client_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/engine"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/redispeek"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// enqueueCounter is a go-redis hook recording, for every call of the
// enqueue script, how many triggers it carried. While hold is open, the
// first calls wait before they are sent, so that triggers made meanwhile
// queue up behind them.
type enqueueCounter struct {
	hold chan struct{}

	mu        sync.Mutex
	calls     []int
	pipelined int
}

func newEnqueueCounter() *enqueueCounter {
	return &enqueueCounter{hold: make(chan struct{})}
}

// triggers returns how many triggers an enqueue call carries, or 0 for
// any other command.
func (c *enqueueCounter) triggers(cmd redis.Cmder) int { return redispeek.EnqueueTriggers(cmd) }

func (c *enqueueCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *enqueueCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		n := c.triggers(cmd)
		if n == 0 {
			return next(ctx, cmd)
		}
		<-c.hold
		err := next(ctx, cmd)
		// A call that met a server without the script or function is
		// sent again, and counts then.
		if redistest.ScriptRan(err) {
			c.mu.Lock()
			c.calls = append(c.calls, n)
			c.mu.Unlock()
		}
		return err
	}
}

func (c *enqueueCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if c.triggers(cmd) > 0 {
				c.mu.Lock()
				c.pipelined++
				c.mu.Unlock()
			}
		}
		return next(ctx, cmds)
	}
}

var batchTask = task.Must[orderInput, orderResult]("batched", task.Options{
	Idempotency: task.Status(`"order:" + input.id`, time.Minute),
})

// With batching on, triggers made while earlier ones are being sent go to
// Redis together, in one call of the enqueue script; with it off, each
// trigger is a call of its own.
func TestConcurrentTriggersShareOneScriptCall(t *testing.T) {
	b := redistest.Real(t)
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", disabled), func(t *testing.T) {
			rdb := redis.NewClient(b.Client.(*redis.Client).Options())
			defer rdb.Close()
			counter := newEnqueueCounter()
			rdb.AddHook(counter)
			c, err := client.New(client.Options{Redis: rdb, Namespace: b.Namespace, DisableTriggerBatching: disabled})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const triggers = 20
			var wg sync.WaitGroup
			errs := make(chan error, triggers)
			for i := 0; i < triggers; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := client.RunNoWait(context.Background(), c, batchTask, orderInput{ID: fmt.Sprintf("%v-%d", disabled, i)})
					errs <- err
				}()
			}
			// Let every caller queue its trigger behind the held calls.
			time.Sleep(200 * time.Millisecond)
			close(counter.hold)
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			total, most := 0, 0
			for _, n := range counter.calls {
				total += n
				most = max(most, n)
			}
			if total != triggers || counter.pipelined != 0 {
				t.Fatalf("%d triggers sent in calls %v and %d pipelined; want %d, in calls of the script", total, counter.calls, counter.pipelined, triggers)
			}
			if disabled && most != 1 {
				t.Fatalf("batching off: calls carried %v triggers, want one each", counter.calls)
			}
			if !disabled && (most < 2 || len(counter.calls) >= triggers) {
				t.Fatalf("batching on: calls carried %v triggers, want the queued ones together", counter.calls)
			}
		})
	}
}

// 1,000 triggers of 200 keys from 50 goroutines: whether batched or not,
// each key gets exactly one run, and every other trigger of it collides
// with that run.
func TestConcurrentTriggersKeepTheirOwnOutcomes(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("disabled=%v", disabled), func(t *testing.T) {
			redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
				c, err := client.New(client.Options{Redis: b.Client, Namespace: b.Namespace, DisableTriggerBatching: disabled})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				const goroutines, perGoroutine, keys = 50, 20, 200
				type outcome struct{ key, created, owner string }
				out := make(chan outcome, goroutines*perGoroutine)
				errs := make(chan error, goroutines*perGoroutine)
				var wg sync.WaitGroup
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < perGoroutine; i++ {
							key := fmt.Sprint((g*perGoroutine + i) % keys)
							ref, err := client.RunNoWait(context.Background(), c, batchTask, orderInput{ID: key})
							var coll *client.IdempotencyCollisionError
							switch {
							case err == nil:
								out <- outcome{key: key, created: ref.ID()}
							case errors.As(err, &coll):
								out <- outcome{key: key, owner: coll.ExistingRunID}
							default:
								errs <- err
							}
						}
					}()
				}
				wg.Wait()
				close(out)
				close(errs)
				for err := range errs {
					t.Fatalf("trigger failed: %v", err)
				}
				created := map[string]string{}
				var owners []outcome
				for o := range out {
					if o.created == "" {
						owners = append(owners, o)
						continue
					}
					if prev, dup := created[o.key]; dup {
						t.Fatalf("key %s got two runs: %s and %s", o.key, prev, o.created)
					}
					created[o.key] = o.created
				}
				if len(created) != keys || len(owners) != goroutines*perGoroutine-keys {
					t.Fatalf("%d keys got a run and %d triggers collided; want %d and %d", len(created), len(owners), keys, goroutines*perGoroutine-keys)
				}
				for _, o := range owners {
					if created[o.key] != o.owner {
						t.Fatalf("a trigger of key %s collided with %s, but the key's run is %s", o.key, o.owner, created[o.key])
					}
				}
			})
		})
	}
}

// A trigger whose key holds the wrong type fails alone, whether or not it
// shared a script call with others.
func TestBatchedTriggerErrorsStayWithTheirTrigger(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		rk, err := redispeek.IdempotencyKey(context.Background(), clientlink.Store(c), "order:bad")
		if err != nil {
			t.Fatal(err)
		}
		b.Client.HSet(context.Background(), rk, "x", "y")
		var wg sync.WaitGroup
		results := make([]error, 20)
		for i := range results {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := fmt.Sprint(i)
				if i == 7 {
					id = "bad"
				}
				_, results[i] = client.RunNoWait(context.Background(), c, batchTask, orderInput{ID: id})
			}()
		}
		wg.Wait()
		for i, err := range results {
			var wt *engine.WrongTypeError
			if i == 7 && (!errors.Is(err, client.ErrWrongType) || !errors.As(err, &wt) || wt.Key != rk) {
				t.Fatalf("trigger of the wrong-type key: %v, want a *engine.WrongTypeError naming its key", err)
			}
			if i != 7 && err != nil {
				t.Fatalf("trigger %d: %v", i, err)
			}
		}
	})
}

func TestBatchedTriggerWithADoneContextCreatesNothing(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := client.RunNoWait(ctx, c, batchTask, orderInput{ID: "late"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("trigger with a cancelled context = %v, want context.Canceled", err)
		}
		if _, held, _ := clientlink.Store(c).GetKey(context.Background(), "order:late"); held {
			t.Fatal("a cancelled trigger claimed its key")
		}
	})
}
