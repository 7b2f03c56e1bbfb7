// Package finished subscribes to a namespace's notices of runs ending,
// for counting them: the HTTP API's metrics and the benchmarks.
package finished

import (
	"context"
	"sync"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
)

// Runs is a subscription to the namespace's notices of runs
// reaching a terminal status, for counting them (metrics, a dashboard's
// live totals). Notices published while the connection is down (on a
// cluster, while the master of a partition fails over) are lost; the
// subscription is made again by itself.
type Runs struct {
	n engine.Notices
	// channels is how many channels n subscribed to (one per partition);
	// err is why it could not subscribe.
	channels int
	err      error
	ready    chan struct{}
	ch       chan map[string]int
	done     chan struct{}
	stop     sync.Once
}

// Subscribe subscribes to the notices of runs ending in the namespace of
// c, a *client.Client. Wait for Ready before relying on it to see a run
// that ends next; Close it when done.
func Subscribe(ctx context.Context, c any) *Runs {
	l := clientlink.Of(c)
	f := &Runs{ch: make(chan map[string]int, 64), ready: make(chan struct{}), done: make(chan struct{})}
	octx, cancel := context.WithTimeout(ctx, l.OperationTimeout)
	f.n, f.channels, f.err = l.Engine.SubscribeFinished(octx)
	cancel()
	if f.n == nil {
		// A subscription to nothing, so that C and Close work as usual.
		f.n = l.Engine.Notices()
	}
	go f.forward()
	return f
}

// Ready waits until Redis confirms the subscription (to the channel of
// every partition), or ctx ends.
func (f *Runs) Ready(ctx context.Context) error {
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

// C delivers, per notice, how many runs ended with each status (the
// client.Status values). It is
// closed after Close.
func (f *Runs) C() <-chan map[string]int { return f.ch }

// Close ends the subscription.
func (f *Runs) Close() error {
	f.stop.Do(func() { close(f.done) })
	return f.n.Close()
}

func (f *Runs) forward() {
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
		counts := map[string]int{}
		for status, n := range engine.ParseFinished(nt.Payload) {
			counts[status] += n
		}
		select {
		case f.ch <- counts:
		case <-f.done:
			return
		}
	}
}
