package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

// asynqType is the asynq task type of every trigger.
const asynqType = "peers:noop"

// asynqSystem drives asynq through its public API: Client.EnqueueContext
// of a task whose payload is the trigger's JSON, with Unique(ttl), on a
// queue of the round's own; a Server with a ServeMux consumes.
type asynqSystem struct {
	h   *harness
	opt asynq.RedisConnOpt
}

func newAsynq(h *harness) *asynqSystem { return &asynqSystem{h: h} }

// nameAsynq names asynq in the report.
const nameAsynq = "asynq"

func (s *asynqSystem) name() string { return nameAsynq }

// open makes a client and an inspector for a queue of the round's own.
func (s *asynqSystem) open(ctx context.Context, label string) (round, error) {
	if s.opt == nil {
		opt, err := asynq.ParseRedisURI(s.h.url)
		if err != nil {
			return nil, fmt.Errorf("asynq redis URL: %w", err)
		}
		if o, ok := opt.(asynq.RedisClientOpt); ok && s.h.cfg.asynqPool > 0 {
			o.PoolSize = s.h.cfg.asynqPool
			opt = o
		}
		s.opt = opt
	}
	r := &asynqRound{s: s, queue: s.h.run + "-" + label, c: asynq.NewClient(s.opt), in: asynq.NewInspector(s.opt)}
	if err := r.c.Ping(); err != nil {
		_ = r.c.Close()
		_ = r.in.Close()
		return nil, fmt.Errorf("asynq ping: %w", err)
	}
	return r, nil
}

// asynqRound is a round on one queue.
type asynqRound struct {
	s     *asynqSystem
	queue string
	c     *asynq.Client
	in    *asynq.Inspector
}

// enqueue makes trigger i: the same JSON payload as taskq's input, made
// for each call as a user would.
func (r *asynqRound) enqueue(ctx context.Context, i int) error {
	b, err := json.Marshal(payload{ID: id(i)})
	if err != nil {
		return err
	}
	_, err = r.c.EnqueueContext(ctx, asynq.NewTask(asynqType, b), asynq.Queue(r.queue), asynq.Unique(r.s.h.cfg.ttl))
	return err
}

func (r *asynqRound) trigger(ctx context.Context, i int) error { return r.enqueue(ctx, i) }

func (r *asynqRound) duplicate(ctx context.Context, i int) error {
	err := r.enqueue(ctx, i)
	switch {
	case errors.Is(err, asynq.ErrDuplicateTask):
		return nil
	case err == nil:
		return errors.New("a duplicate was accepted")
	default:
		return err
	}
}

// consumer prepares a server with the configured concurrency on the
// round's queue.
func (r *asynqRound) consumer(ctx context.Context, n int) (consumer, error) {
	level := asynq.FatalLevel
	if r.s.h.cfg.verbose {
		level = asynq.WarnLevel
	}
	c := &asynqConsumer{r: r, n: n, handledAll: make(chan struct{})}
	c.srv = asynq.NewServer(r.s.opt, asynq.Config{
		Concurrency: r.s.h.cfg.slots, Queues: map[string]int{r.queue: 1}, LogLevel: level,
	})
	c.mux = asynq.NewServeMux()
	c.mux.HandleFunc(asynqType, func(context.Context, *asynq.Task) error {
		if c.handled.Add(1) == int64(n) {
			c.once.Do(func() { close(c.handledAll) })
		}
		return nil
	})
	return c, nil
}

// asynqConsumer is a server and the count of the tasks it handled.
type asynqConsumer struct {
	r          *asynqRound
	srv        *asynq.Server
	mux        *asynq.ServeMux
	n          int
	handled    atomic.Int64
	handledAll chan struct{}
	once       sync.Once
	started    bool
}

func (c *asynqConsumer) start(context.Context) error {
	if err := c.srv.Start(c.mux); err != nil {
		return fmt.Errorf("asynq server: %w", err)
	}
	c.started = true
	return nil
}

// wait waits until the handler has returned for every task, then until
// the queue's counters say that every task's outcome is recorded:
// processed n in all, none pending or active.
func (c *asynqConsumer) wait(ctx context.Context) error {
	select {
	case <-c.handledAll:
	case <-ctx.Done():
		return fmt.Errorf("%d of %d tasks handled: %w", c.handled.Load(), c.n, ctx.Err())
	}
	for {
		qi, err := c.r.in.GetQueueInfo(c.r.queue)
		if err != nil {
			return fmt.Errorf("asynq queue info: %w", err)
		}
		if qi.ProcessedTotal >= c.n && qi.Pending == 0 && qi.Active == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d tasks processed: %w", qi.ProcessedTotal, c.n, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// stop shuts the server down and checks that n tasks were processed, each
// handled once, none failed and nothing is left.
func (c *asynqConsumer) stop(context.Context) error {
	if c.started {
		c.srv.Shutdown()
	}
	if h := c.handled.Load(); h != int64(c.n) {
		return fmt.Errorf("the handler ran %d times for %d tasks", h, c.n)
	}
	qi, err := c.r.in.GetQueueInfo(c.r.queue)
	if err != nil {
		return fmt.Errorf("asynq queue info: %w", err)
	}
	if qi.ProcessedTotal != c.n || qi.FailedTotal != 0 || qi.Size != 0 {
		return fmt.Errorf("%d tasks processed, %d failed and %d left, want %d processed", qi.ProcessedTotal, qi.FailedTotal, qi.Size, c.n)
	}
	return nil
}

// close closes the client and the inspector and deletes the queue's keys.
func (r *asynqRound) close(ctx context.Context) error {
	return errors.Join(r.c.Close(), r.in.Close(),
		r.s.h.deleteKeys(ctx, "asynq:{"+r.queue+"}:*"),
		r.s.h.admin.SRem(ctx, "asynq:queues", r.queue).Err())
}
