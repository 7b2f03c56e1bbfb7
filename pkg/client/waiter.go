package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
)

// recheckInterval is a safety net only: waiters are woken by the run's
// completion notice; this catches a notice lost while the subscription
// connection was being re-established.
const recheckInterval = 5 * time.Second

// waiter shares one Pub/Sub connection among every goroutine of a Client
// that waits for a run, subscribing to each run's completion channel while
// somebody waits on it.
type waiter struct {
	rdb redis.UniversalClient
	// channel names a run's completion channel, in its partition.
	channel func(ctx context.Context, runID string) (string, error)
	log     *slog.Logger
	// timeout is the client's OperationTimeout: it bounds a subscription
	// and its confirmation like any other call.
	timeout time.Duration
	watch   func(ctx context.Context, runID string) (string, error)
	// unavailable reports a call Redis did not answer as the client does.
	unavailable func(ctx context.Context, err error) error

	mu     sync.Mutex
	ps     *redis.PubSub
	subs   map[string]*subscription
	closed bool
	stop   chan struct{}
	done   chan struct{}
}

type subscription struct {
	refs      int
	ready     chan struct{} // closed when the server confirmed the subscription
	notified  chan struct{} // closed when the completion notice arrived
	readyOnce sync.Once
	doneOnce  sync.Once
}

// newWaiter returns a waiter of client c; c.watch asks for a run's
// completion notice (the store's WatchRun), which is published only for
// runs watched, and returns the run's status.
func newWaiter(rdb redis.UniversalClient, c *Client) *waiter {
	return &waiter{
		rdb: rdb, channel: c.doneChannel, log: c.opts.Logger, timeout: c.opts.OperationTimeout,
		watch: c.watch, unavailable: c.unavailable, subs: map[string]*subscription{},
	}
}

// wait returns when check reports true, ctx ends, or check fails. Once
// the subscription is confirmed the run is watched, so a completion after
// that cannot be missed; check is called then if the run has ended (or is
// missing), and on each notice or safety recheck.
func (w *waiter) wait(ctx context.Context, runID string, check func(context.Context) (bool, error)) error {
	ch, err := w.channel(ctx, runID)
	if err != nil {
		return err
	}
	watched := func(ctx context.Context) (bool, error) {
		status, err := w.watch(ctx, runID)
		switch {
		case errors.Is(err, redisstore.ErrRunNotFound):
		case err != nil:
			return false, err
		case !redisstore.IsTerminal(status):
			return false, nil // the notice will come
		}
		return check(ctx)
	}
	for {
		done, err := w.waitOnce(ctx, ch, watched, check)
		if done || err != nil {
			return err
		}
	}
}

// waitOnce subscribes, calls first, and sleeps until a notice, the safety
// recheck or the end of ctx, then calls check. It reports whether the
// last of them succeeded. A subscription Redis does not confirm within
// OperationTimeout fails as any call Redis does not answer.
func (w *waiter) waitOnce(ctx context.Context, ch string, first, check func(context.Context) (bool, error)) (bool, error) {
	s, err := w.subscribe(ctx, ch)
	if err != nil {
		return false, err
	}
	defer w.unsubscribe(ch, s)
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case <-s.ready:
	case <-timer.C:
		err := fmt.Errorf("client: subscription to %s not confirmed: %w", ch, context.DeadlineExceeded)
		return false, w.unavailable(ctx, err)
	case <-ctx.Done():
		return false, ctx.Err()
	}
	if ok, err := first(ctx); err != nil || ok {
		return ok, err
	}
	timer.Reset(recheckInterval)
	select {
	case <-s.notified:
	case <-timer.C:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	return check(ctx)
}

func (w *waiter) subscribe(ctx context.Context, ch string) (*subscription, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("client: closed")
	}
	if w.ps == nil {
		// Not the caller's ctx: the connection outlives this waiter.
		w.ps = w.rdb.Subscribe(context.Background())
		w.stop = make(chan struct{})
		w.done = make(chan struct{})
		go w.receive(w.ps, w.stop, w.done)
	}
	s := w.subs[ch]
	if s == nil {
		s = &subscription{ready: make(chan struct{}), notified: make(chan struct{})}
		w.subs[ch] = s
		sctx, cancel := boundCtx(ctx, w.timeout)
		err := w.ps.Subscribe(sctx, ch)
		cancel()
		if err != nil {
			delete(w.subs, ch)
			return nil, w.unavailable(sctx, err)
		}
	}
	s.refs++
	return s, nil
}

func (w *waiter) unsubscribe(ch string, s *subscription) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s.refs--
	cur := w.subs[ch]
	if s.refs > 0 || (cur != nil && cur != s) {
		return // still in use, or a newer subscription took the channel over
	}
	delete(w.subs, ch)
	if w.ps != nil && !w.closed {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		_ = w.ps.Unsubscribe(ctx, ch)
	}
}

func (w *waiter) receive(ps *redis.PubSub, stop, done chan struct{}) {
	defer close(done)
	for {
		msg, err := ps.Receive(context.Background())
		select {
		case <-stop:
			return
		default:
		}
		if err != nil {
			// The connection broke; go-redis resubscribes on the next
			// Receive. Wake every waiter to re-check, since a notice may
			// have been lost meanwhile.
			w.log.Debug("taskq: result subscription interrupted", "err", err)
			w.wakeAll()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				if s := w.lookup(m.Channel); s != nil {
					s.readyOnce.Do(func() { close(s.ready) })
				}
			}
		case *redis.Message:
			if s := w.lookup(m.Channel); s != nil {
				s.doneOnce.Do(func() { close(s.notified) })
			}
		}
	}
}

func (w *waiter) lookup(ch string) *subscription {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.subs[ch]
}

func (w *waiter) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch, s := range w.subs {
		s.readyOnce.Do(func() { close(s.ready) })
		s.doneOnce.Do(func() { close(s.notified) })
		// Later waiters start a fresh subscription on this channel.
		delete(w.subs, ch)
	}
}

func (w *waiter) close() error {
	w.mu.Lock()
	if w.closed || w.ps == nil {
		w.closed = true
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.stop)
	ps, done := w.ps, w.done
	w.mu.Unlock()
	err := ps.Close()
	<-done
	return err
}
