package client

import (
	"context"
	"sync"

	"github.com/taskq/taskq/internal/engine"
)

// FinishedRuns is a subscription to the namespace's notices of runs
// reaching a terminal status, for counting them (metrics, a dashboard's
// live totals). Notices published while the connection is down (on a
// cluster, while the master of a partition fails over) are lost; the
// subscription is made again by itself.
type FinishedRuns struct {
	n engine.Notices
	// channels is how many channels n subscribed to (one per partition);
	// err is why it could not subscribe.
	channels int
	err      error
	ready    chan struct{}
	ch       chan map[Status]int
	done     chan struct{}
	stop     sync.Once
}

// SubscribeFinished subscribes to the notices of runs ending. Wait for
// Ready before relying on it to see a run that ends next; Close it when
// done.
func (in *Inspector) SubscribeFinished(ctx context.Context) *FinishedRuns {
	f := &FinishedRuns{ch: make(chan map[Status]int, 64), ready: make(chan struct{}), done: make(chan struct{})}
	octx, cancel := in.c.opCtx(ctx)
	f.n, f.channels, f.err = in.c.store.SubscribeFinished(octx)
	cancel()
	if f.err != nil {
		f.err = in.c.unavailable(octx, f.err)
	}
	if f.n == nil {
		// A subscription to nothing, so that C and Close work as usual.
		f.n = in.c.store.Notices()
	}
	go f.forward()
	return f
}

// Ready waits until Redis confirms the subscription (to the channel of
// every partition), or ctx ends.
func (f *FinishedRuns) Ready(ctx context.Context) error {
	if f.err != nil {
		return f.err
	}
	select {
	case <-f.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// C delivers, per notice, how many runs ended with each status. It is
// closed after Close.
func (f *FinishedRuns) C() <-chan map[Status]int { return f.ch }

// Close ends the subscription.
func (f *FinishedRuns) Close() error {
	f.stop.Do(func() { close(f.done) })
	return f.n.Close()
}

func (f *FinishedRuns) forward() {
	defer close(f.ch)
	confirmed := map[string]bool{}
	for nt := range f.n.C() {
		switch nt.Kind {
		case engine.NoticeSubscribed:
			if !confirmed[nt.Channel] {
				confirmed[nt.Channel] = true
				if len(confirmed) == f.channels {
					close(f.ready)
				}
			}
			continue
		case engine.NoticeInterrupted:
			continue
		}
		counts := map[Status]int{}
		for status, n := range engine.ParseFinished(nt.Payload) {
			counts[Status(status)] += n
		}
		select {
		case f.ch <- counts:
		case <-f.done:
			return
		}
	}
}
