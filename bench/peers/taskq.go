package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/taskq/taskq/internal/finished"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskq/taskq/pkg/client"
	"github.com/taskq/taskq/pkg/task"
	"github.com/taskq/taskq/pkg/worker"
)

// taskqSystem drives taskq through pkg/client and pkg/worker: a task whose
// idempotency key is the input's id, held for the TTL (strategy ttl,
// policy reject), triggered with RunNoWait on a client with its default
// batching.
type taskqSystem struct {
	h    *harness
	noop *task.Task[payload, struct{}]
}

func newTaskq(h *harness) *taskqSystem {
	return &taskqSystem{h: h, noop: task.Must[payload, struct{}]("peers-noop", task.Options{
		Idempotency: task.TTL(`input.id`, h.cfg.ttl),
	})}
}

// nameTaskq names taskq in the report.
const nameTaskq = "taskq"

func (s *taskqSystem) name() string { return nameTaskq }

// open makes a client on a namespace of the round's own.
func (s *taskqSystem) open(ctx context.Context, label string) (round, error) {
	ns := s.h.run + "-" + label
	c, err := client.New(client.Options{RedisURL: s.h.url, Namespace: ns, Logger: s.h.log})
	if err != nil {
		return nil, err
	}
	return &taskqRound{s: s, ns: ns, c: c}, nil
}

// taskqRound is a round on namespace ns.
type taskqRound struct {
	s  *taskqSystem
	ns string
	c  *client.Client
}

func (r *taskqRound) trigger(ctx context.Context, i int) error {
	_, err := client.RunNoWait(ctx, r.c, r.s.noop, payload{ID: id(i)})
	return err
}

func (r *taskqRound) duplicate(ctx context.Context, i int) error {
	_, err := client.RunNoWait(ctx, r.c, r.s.noop, payload{ID: id(i)})
	var coll *client.IdempotencyCollisionError
	switch {
	case errors.As(err, &coll):
		return nil
	case err == nil:
		return errors.New("a duplicate was accepted")
	default:
		return err
	}
}

// consumer prepares a worker with the configured slots and a subscription
// to the namespace's notices of runs ending, which tell when the last run
// has finished.
func (r *taskqRound) consumer(ctx context.Context, n int) (consumer, error) {
	w, err := worker.New(worker.Options{
		RedisURL: r.s.h.url, Namespace: r.ns, Concurrency: r.s.h.cfg.slots, Logger: r.s.h.log,
	})
	if err != nil {
		return nil, err
	}
	c := &taskqConsumer{r: r, w: w, n: n, done: make(chan struct{}), counts: map[string]int{}}
	if err := worker.Handle(w, r.s.noop, func(worker.Context, payload) (struct{}, error) {
		c.handled.Add(1)
		return struct{}{}, nil
	}); err != nil {
		_ = w.Shutdown(ctx)
		return nil, err
	}
	c.finished = finished.Subscribe(ctx, r.c)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.finished.Ready(rctx); err != nil {
		_ = c.finished.Close()
		_ = w.Shutdown(ctx)
		return nil, fmt.Errorf("subscribe to finished runs: %w", err)
	}
	go c.count()
	return c, nil
}

// taskqConsumer is a worker and the count of the runs it finished.
type taskqConsumer struct {
	r        *taskqRound
	w        *worker.Worker
	n        int
	finished *finished.Runs
	handled  atomic.Int64
	// done is closed once n runs have ended, whatever their status.
	done   chan struct{}
	mu     sync.Mutex
	counts map[string]int
}

// count adds up the notices of runs ending.
func (c *taskqConsumer) count() {
	total, closed := 0, false
	for m := range c.finished.C() {
		c.mu.Lock()
		for st, k := range m {
			c.counts[st] += k
			total += k
		}
		c.mu.Unlock()
		if total >= c.n && !closed {
			close(c.done)
			closed = true
		}
	}
}

func (c *taskqConsumer) start(ctx context.Context) error { return c.w.Start(ctx) }

func (c *taskqConsumer) wait(ctx context.Context) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d of %d runs finished: %w", c.ended(), c.n, ctx.Err())
	}
}

func (c *taskqConsumer) ended() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := 0
	for _, k := range c.counts {
		total += k
	}
	return total
}

// stop shuts the worker down and checks that n runs succeeded, each
// handled once, and that nothing is left queued or in flight.
func (c *taskqConsumer) stop(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := c.w.Shutdown(sctx)
	_ = c.finished.Close()
	if err != nil {
		return fmt.Errorf("worker shutdown: %w", err)
	}
	c.mu.Lock()
	succeeded, total := c.counts[string(client.StatusSucceeded)], 0
	for _, k := range c.counts {
		total += k
	}
	c.mu.Unlock()
	if succeeded != c.n || total != c.n {
		return fmt.Errorf("%d runs succeeded and %d ended, want %d", succeeded, total, c.n)
	}
	if h := c.handled.Load(); h != int64(c.n) {
		return fmt.Errorf("the handler ran %d times for %d runs", h, c.n)
	}
	qs, err := c.r.c.Inspector().QueueStats(ctx, c.r.s.noop.Name())
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.Queued != 0 || q.InFlight != 0 {
			return fmt.Errorf("%d runs queued and %d in flight after the last one finished", q.Queued, q.InFlight)
		}
	}
	return nil
}

// close closes the client and deletes the namespace's keys (every
// partition's).
func (r *taskqRound) close(ctx context.Context) error {
	err := r.c.Close()
	return errors.Join(err, r.s.h.deleteKeys(ctx, "taskq:{"+r.ns+"}:*", "taskq:{"+r.ns+"#*"))
}
