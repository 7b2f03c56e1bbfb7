package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Defaults of BatcherOptions.
const (
	// BatcherMaxBatchDefault bounds one batch, so a burst of calls is
	// split into several batches that Redis serves in turn rather than one
	// that holds it for long.
	BatcherMaxBatchDefault = 256
	// BatcherSendersDefault is how many batches may be in flight at once:
	// while Redis runs one, the next is being built and the previous one's
	// replies are being read, so neither side waits for the other.
	BatcherSendersDefault = 2
	// BatcherTimeoutDefault bounds the sending of one batch.
	BatcherTimeoutDefault = 5 * time.Second
)

// BatcherOptions configure a Batcher. Zero values mean the defaults.
type BatcherOptions struct {
	// MaxBatch is the most calls sent in one batch.
	MaxBatch int
	// Senders is the most batches in flight at once.
	Senders int
	// Timeout bounds the sending of one batch.
	Timeout time.Duration
}

func (o BatcherOptions) withDefaults() (BatcherOptions, error) {
	if o.MaxBatch == 0 {
		o.MaxBatch = BatcherMaxBatchDefault
	}
	if o.Senders == 0 {
		o.Senders = BatcherSendersDefault
	}
	if o.Timeout == 0 {
		o.Timeout = BatcherTimeoutDefault
	}
	if o.MaxBatch < 1 || o.Senders < 1 || o.Timeout < 0 {
		return o, fmt.Errorf("redisstore: batcher options %+v: MaxBatch and Senders must be at least 1, Timeout not negative", o)
	}
	return o, nil
}

// Batcher coalesces the calls that many goroutines make at the same time
// into batches, each sent by one call of its send function (one round
// trip): Do queues a call, and a sender takes everything queued at that
// moment (up to MaxBatch) and sends it. Nothing waits for a batch to fill:
// a call made while a sender is free goes out at once, and calls made while
// every sender is busy go out together as soon as one is free. So batches
// grow with the load and add no latency when there is none. Senders are
// goroutines started on demand that end when the queue is empty; an idle
// Batcher holds none.
type Batcher[P, R any] struct {
	send func(ctx context.Context, ps []P) ([]R, []error)
	opts BatcherOptions

	mu      sync.Mutex
	queue   []*batchCall[P, R]
	senders int

	// ticks are the bounds DoWithin's callers wait for, by when they end
	// (unix ns): each is closed then, for every call whose bound ends
	// in it (see DoWithin).
	ticksMu sync.Mutex
	ticks   map[int64]chan struct{}

	// calls holds calls done with, for the next ones: a call and its
	// channel are otherwise two allocations per call (see recycle).
	calls sync.Pool
}

type batchCall[P, R any] struct {
	ctx context.Context
	// deadline, when set, is DoWithin's bound: a call past it is not sent.
	deadline time.Time
	p        P
	r        R
	err      error
	// done receives once the call was sent (Do; buffered, so that the
	// sender never waits for a caller that stopped waiting); then is
	// called instead when it is set (Go).
	done chan struct{}
	then func(R, error)
}

// NewBatcher returns a Batcher that sends batches with send, which must
// return one result and one error per parameter, in order (as the store's
// *Batch methods do).
func NewBatcher[P, R any](opts BatcherOptions, send func(ctx context.Context, ps []P) ([]R, []error)) (*Batcher[P, R], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if send == nil {
		return nil, errors.New("redisstore: batcher needs a send function")
	}
	return &Batcher[P, R]{send: send, opts: opts}, nil
}

// newCall returns a call of p, a recycled one when there is one.
func (b *Batcher[P, R]) newCall(ctx context.Context, p P, deadline time.Time, then func(R, error)) *batchCall[P, R] {
	c, _ := b.calls.Get().(*batchCall[P, R])
	if c == nil {
		c = &batchCall[P, R]{done: make(chan struct{}, 1)}
	}
	c.ctx, c.p, c.deadline, c.then = ctx, p, deadline, then
	return c
}

// recycle keeps c for a later call. Only a call nobody holds any more is
// recycled: a Go call once then has returned, a Do call once its caller
// took the result (one whose caller stopped waiting is left to the
// garbage collector, as the sender may still hold it).
func (b *Batcher[P, R]) recycle(c *batchCall[P, R]) {
	*c = batchCall[P, R]{done: c.done}
	b.calls.Put(c)
}

// complete hands the call's result to whoever waits for it.
func (b *Batcher[P, R]) complete(c *batchCall[P, R]) {
	if c.then != nil {
		c.then(c.r, c.err)
		b.recycle(c)
		return
	}
	c.done <- struct{}{}
}

// Do queues p, waits until the batch holding it has been sent and returns
// p's own result and error. If ctx ends first, Do returns ctx's error; a
// call that had already been sent may still have taken effect, as with any
// Redis command whose caller stopped waiting for the reply.
func (b *Batcher[P, R]) Do(ctx context.Context, p P) (R, error) {
	return b.do(ctx, p, time.Time{}, nil)
}

// DoWithin is Do, bounded by d as well as by ctx: past d it returns
// context.DeadlineExceeded, and a call not yet sent is not sent, as if ctx
// had that deadline. It keeps the bound without a timer of its own, which
// costs a trigger more than the rest of its queueing: the calls whose
// bounds end in the same tick (a sixteenth of d, from 1ms to 10ms) wait for
// one channel that one timer closes, so a bound ends up to a tick late.
func (b *Batcher[P, R]) DoWithin(ctx context.Context, p P, d time.Duration) (R, error) {
	deadline := time.Now().Add(d)
	return b.do(ctx, p, deadline, b.tick(deadline, d))
}

// do queues p and waits for its result, for ctx to end, or for bound (nil
// for none) to close, which deadline (zero for none) stands for.
func (b *Batcher[P, R]) do(ctx context.Context, p P, deadline time.Time, bound <-chan struct{}) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := b.newCall(ctx, p, deadline, nil)
	b.enqueue(c)
	select {
	case <-c.done:
		r, err := c.r, c.err
		b.recycle(c)
		return r, err
	case <-ctx.Done():
		return zero, ctx.Err()
	case <-bound:
		return zero, context.DeadlineExceeded
	}
}

// tick returns the channel closed at the end of the tick holding
// deadline, a bound of d, starting its timer if it is the tick's first.
func (b *Batcher[P, R]) tick(deadline time.Time, d time.Duration) <-chan struct{} {
	step := min(max(d/16, time.Millisecond), 10*time.Millisecond).Nanoseconds()
	end := (deadline.UnixNano()/step + 1) * step
	b.ticksMu.Lock()
	defer b.ticksMu.Unlock()
	if ch, ok := b.ticks[end]; ok {
		return ch
	}
	if b.ticks == nil {
		b.ticks = map[int64]chan struct{}{}
	}
	ch := make(chan struct{})
	b.ticks[end] = ch
	time.AfterFunc(time.Until(time.Unix(0, end)), func() {
		b.ticksMu.Lock()
		delete(b.ticks, end)
		b.ticksMu.Unlock()
		close(ch)
	})
	return ch
}

// Go queues p as Do does but returns at once: then receives p's result and
// error once the batch holding it has been sent, or ctx's error if ctx ended
// before it was sent. then runs on the goroutine that sent the batch (or on
// the caller's, when ctx has already ended), so it must not block; it is
// called exactly once. A caller with nothing to do while the call is sent
// saves a goroutine hand-off this way.
func (b *Batcher[P, R]) Go(ctx context.Context, p P, then func(R, error)) {
	if err := ctx.Err(); err != nil {
		var zero R
		then(zero, err)
		return
	}
	b.enqueue(b.newCall(ctx, p, time.Time{}, then))
}

// enqueue queues c and starts a sender if one is allowed and needed.
func (b *Batcher[P, R]) enqueue(c *batchCall[P, R]) {
	b.mu.Lock()
	b.queue = append(b.queue, c)
	spawn := b.senders < b.opts.Senders
	if spawn {
		b.senders++
	}
	b.mu.Unlock()
	if spawn {
		go b.sender()
	}
}

// sender sends batches until the queue is empty.
func (b *Batcher[P, R]) sender() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.opts.MaxBatch)
		if n == 0 {
			b.senders--
			if cap(b.queue) > b.opts.MaxBatch {
				b.queue = nil // let a large backing array go
			}
			b.mu.Unlock()
			return
		}
		batch := make([]*batchCall[P, R], n)
		copy(batch, b.queue)
		// The queue keeps its backing array, which the next calls would
		// grow again, but not the calls it held: they are the batch's.
		left := copy(b.queue, b.queue[n:])
		clear(b.queue[left:])
		b.queue = b.queue[:left]
		b.mu.Unlock()
		b.flush(batch)
	}
}

// flush sends one batch and hands each caller its result. Calls whose
// caller has stopped waiting are not sent.
func (b *Batcher[P, R]) flush(batch []*batchCall[P, R]) {
	live := batch[:0]
	var now time.Time
	for _, c := range batch {
		if err := c.ctx.Err(); err != nil {
			c.err = err
			b.complete(c)
			continue
		}
		if !c.deadline.IsZero() {
			if now.IsZero() {
				now = time.Now()
			}
			if !now.Before(c.deadline) {
				c.err = context.DeadlineExceeded
				b.complete(c)
				continue
			}
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	ps := make([]P, len(live))
	for i, c := range live {
		ps[i] = c.p
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.Timeout)
	rs, errs := b.send(ctx, ps)
	cancel()
	for i, c := range live {
		switch {
		case i >= len(rs) || i >= len(errs):
			c.err = fmt.Errorf("redisstore: batch send returned %d results for %d calls", len(rs), len(live))
		default:
			c.r, c.err = rs[i], errs[i]
		}
		b.complete(c)
	}
}
