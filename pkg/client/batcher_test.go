package client_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
)

// enqueueCounter is a go-redis hook counting enqueue script calls sent on
// their own and inside pipelines.
type enqueueCounter struct {
	sha string

	mu        sync.Mutex
	single    int
	pipelined int
}

func newEnqueueCounter() *enqueueCounter {
	c := &enqueueCounter{}
	for sha, name := range redisstore.ScriptNames() {
		if name == "enqueue" {
			c.sha = sha
		}
	}
	return c
}

func (c *enqueueCounter) isEnqueue(cmd redis.Cmder) bool {
	a := cmd.Args()
	return len(a) > 1 && strings.EqualFold(fmt.Sprint(a[0]), "evalsha") && fmt.Sprint(a[1]) == c.sha
}

func (c *enqueueCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

func (c *enqueueCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if c.isEnqueue(cmd) {
			c.mu.Lock()
			c.single++
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *enqueueCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		n := 0
		for _, cmd := range cmds {
			if c.isEnqueue(cmd) {
				n++
			}
		}
		c.mu.Lock()
		c.pipelined += n
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

var batchTask = task.Must[orderInput, orderResult]("batched", task.Options{
	Idempotency: task.Status(`"order:" + input.id`, time.Minute),
})

func TestTriggersArePipelinedByDefault(t *testing.T) {
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
			if _, err := client.RunNoWait(context.Background(), c, batchTask, orderInput{ID: fmt.Sprint(disabled)}); err != nil {
				t.Fatal(err)
			}
			single, pipelined := counter.single, counter.pipelined
			if disabled && (single != 1 || pipelined != 0) {
				t.Fatalf("batching disabled: %d single and %d pipelined enqueue calls, want 1 single", single, pipelined)
			}
			if !disabled && (single != 0 || pipelined != 1) {
				t.Fatalf("batching on: %d single and %d pipelined enqueue calls, want 1 pipelined", single, pipelined)
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
// shared a pipeline with others.
func TestBatchedTriggerErrorsStayWithTheirTrigger(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		c := newClient(t, b)
		b.Client.HSet(context.Background(), c.Store().Keys().IdempotencyKey("order:bad"), "x", "y")
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
			if i == 7 && !errors.Is(err, redisstore.ErrWrongType) {
				t.Fatalf("trigger of the wrong-type key: %v, want ErrWrongType", err)
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
		if _, held, _ := c.Store().GetKey(context.Background(), "order:late"); held {
			t.Fatal("a cancelled trigger claimed its key")
		}
	})
}
