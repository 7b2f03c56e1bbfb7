package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

// recheckInterval is a safety net only: waiters are woken by the run's
// completion notice; this catches a notice lost some other way.
const recheckInterval = 5 * time.Second

// resubscribeWithin bounds how long a waiter whose subscription broke
// waits for it to be made again before it checks the run's status anyway:
// a notice published meanwhile may be lost, so the waiter checks once
// Redis confirms the subscription again, which on a Redis Cluster is once
// the master of the run's partition answers again (after a failover, its
// replica promoted; Redis Cluster's node timeout is 15 s by default).
// Checking sooner would ask a master that is gone, and fail the wait.
const resubscribeWithin = 30 * time.Second

// waiter shares one subscription (engine.Notices: one Pub/Sub
// connection, one per master on a cluster) among every goroutine of a
// Client that waits for a run, subscribing to each run's completion
// channel while somebody waits on it.
type waiter struct {
	// open makes the subscription, when a first waiter needs it.
	open func() engine.Notices
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
	n      engine.Notices
	subs   map[string]*subscription
	closed bool
	done   chan struct{}
}

type subscription struct {
	refs      int
	ready     chan struct{} // closed when the server confirmed the subscription
	notified  chan struct{} // closed when the completion notice arrived
	readyOnce sync.Once
	doneOnce  sync.Once
	// broke is when the connection carrying the subscription broke, zero
	// while it holds (guarded by waiter.mu).
	broke time.Time
}

// newWaiter returns a waiter of client c; c.watch asks for a run's
// completion notice (the store's WatchRun), which is published only for
// runs watched, and returns the run's status.
func newWaiter(c *Client) *waiter {
	return &waiter{
		open: c.store.Notices, channel: c.doneChannel, log: c.opts.Logger, timeout: c.opts.OperationTimeout,
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
		case errors.Is(err, engine.ErrRunNotFound):
		case err != nil:
			return false, err
		case !engine.IsTerminal(status):
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
// OperationTimeout fails as any call Redis does not answer, unless its
// connection broke meanwhile: then it waits, for up to resubscribeWithin,
// for the subscription to be made again, as a confirmed one does.
func (w *waiter) waitOnce(ctx context.Context, ch string, first, check func(context.Context) (bool, error)) (bool, error) {
	s, err := w.subscribe(ctx, ch)
	if err != nil {
		return false, err
	}
	defer w.unsubscribe(ch, s)
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	for confirmed := false; !confirmed; {
		select {
		case <-s.ready:
			confirmed = true
		case <-timer.C:
			// A connection that broke before Redis's confirmation was
			// read is being made again, and the channel with it.
			if w.resubscribing(s) {
				timer.Reset(w.timeout)
				continue
			}
			err := fmt.Errorf("client: subscription to %s not confirmed: %w", ch, context.DeadlineExceeded)
			return false, w.unavailable(ctx, err)
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	if ok, err := first(ctx); ok {
		return true, nil
	} else if err != nil && !w.resubscribing(s) {
		return false, err
	}
	// On an error, the connection broke as first asked Redis: once the
	// subscription is made again (it closes s.notified), check reads the
	// run, and the next round asks again.
	timer.Reset(recheckInterval)
	for {
		select {
		case <-s.notified:
		case <-timer.C:
			if w.resubscribing(s) {
				timer.Reset(recheckInterval)
				continue
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
		return check(ctx)
	}
}

// resubscribing reports whether s's connection broke and is being made
// again, for less than resubscribeWithin.
func (w *waiter) resubscribing(s *subscription) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return !s.broke.IsZero() && time.Since(s.broke) < resubscribeWithin
}

func (w *waiter) subscribe(ctx context.Context, ch string) (*subscription, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("client: closed")
	}
	if w.n == nil {
		w.n = w.open()
		w.done = make(chan struct{})
		go w.receive(w.n, w.done)
	}
	s := w.subs[ch]
	if s == nil {
		s = &subscription{ready: make(chan struct{}), notified: make(chan struct{})}
		w.subs[ch] = s
		sctx, cancel := boundCtx(ctx, w.timeout)
		err := w.n.Subscribe(sctx, ch)
		cancel()
		if err != nil {
			// The subscription keeps the channel, to be subscribed once
			// Redis answers, until a later waiter on it is done. Not
			// here: on a broken connection that would dial again, and
			// fail this call later than it must.
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
	if w.n != nil && !w.closed {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		_ = w.n.Unsubscribe(ctx, ch)
	}
}

// receive hands the notices of n to the waiters until n closes. A channel
// whose connection broke is marked so; once Redis confirms it again, its
// waiters check the run, since its notice may have been lost meanwhile.
func (w *waiter) receive(n engine.Notices, done chan struct{}) {
	defer close(done)
	for nt := range n.C() {
		switch nt.Kind {
		case engine.NoticeSubscribed:
			w.subscribed(nt.Channel)
		case engine.NoticeMessage:
			if s := w.lookup(nt.Channel); s != nil {
				s.doneOnce.Do(func() { close(s.notified) })
			}
		case engine.NoticeInterrupted:
			w.log.Debug("taskq: result subscription interrupted", "channels", len(nt.Channels))
			w.broken(nt.Channels)
		}
	}
}

func (w *waiter) subscribed(ch string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.subs[ch]
	if s == nil {
		return
	}
	s.readyOnce.Do(func() { close(s.ready) })
	if !s.broke.IsZero() {
		s.doneOnce.Do(func() { close(s.notified) })
		// Later waiters start a fresh subscription on this channel.
		delete(w.subs, ch)
	}
}

func (w *waiter) broken(chs []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	for _, ch := range chs {
		if s := w.subs[ch]; s != nil && s.broke.IsZero() {
			s.broke = now
		}
	}
}

func (w *waiter) lookup(ch string) *subscription {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.subs[ch]
}

func (w *waiter) close() error {
	w.mu.Lock()
	if w.closed || w.n == nil {
		w.closed = true
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	n, done := w.n, w.done
	w.mu.Unlock()
	err := n.Close()
	<-done
	return err
}
