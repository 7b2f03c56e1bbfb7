package client

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
)

// FinishedRuns is a subscription to the namespace's notices of runs
// reaching a terminal status, for counting them (metrics, a dashboard's
// live totals). Notices published while the connection is down are lost.
type FinishedRuns struct {
	ps *redis.PubSub
	// channels is how many channels ps subscribed to (one per partition);
	// err is why it could not subscribe.
	channels int
	err      error
	ch       chan map[Status]int
	done     chan struct{}
	start    sync.Once
	stop     sync.Once
}

// SubscribeFinished subscribes to the notices of runs ending. Wait for
// Ready before relying on it to see a run that ends next; Close it when
// done.
func (in *Inspector) SubscribeFinished(ctx context.Context) *FinishedRuns {
	f := &FinishedRuns{ch: make(chan map[Status]int, 64), done: make(chan struct{})}
	octx, cancel := in.c.opCtx(ctx)
	f.ps, f.channels, f.err = in.c.store.SubscribeFinished(octx)
	cancel()
	if f.err != nil {
		f.err = in.c.unavailable(octx, f.err)
		// A subscription to nothing, so that C and Close work as usual.
		f.ps = in.c.store.Redis().Subscribe(context.Background())
	}
	return f
}

// Ready waits until Redis confirms the subscription (to the channel of
// every partition), or ctx ends. Call it before C, not after.
func (f *FinishedRuns) Ready(ctx context.Context) error {
	if f.err != nil {
		return f.err
	}
	for range f.channels {
		if _, err := f.ps.Receive(ctx); err != nil {
			return err
		}
	}
	return nil
}

// C delivers, per notice, how many runs ended with each status. It is
// closed after Close.
func (f *FinishedRuns) C() <-chan map[Status]int {
	f.start.Do(func() { go f.forward(f.ps.Channel()) })
	return f.ch
}

// Close ends the subscription.
func (f *FinishedRuns) Close() error {
	f.stop.Do(func() { close(f.done) })
	return f.ps.Close()
}

func (f *FinishedRuns) forward(msgs <-chan *redis.Message) {
	defer close(f.ch)
	for msg := range msgs {
		counts := map[Status]int{}
		for status, n := range redisstore.ParseFinished(msg.Payload) {
			counts[Status(status)] += n
		}
		select {
		case f.ch <- counts:
		case <-f.done:
			return
		}
	}
}
