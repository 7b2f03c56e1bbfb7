package worker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// subscribeCancels subscribes to the namespace's cancel notices and
// returns once Redis has confirmed it, within OperationTimeout: from then
// on no cancel is missed while the connection holds (see listenCancels).
func (w *Worker) subscribeCancels(ctx context.Context) (*redis.PubSub, error) {
	ctx, cancel := context.WithTimeout(ctx, w.opts.OperationTimeout)
	defer cancel()
	ch := w.store.Keys().CancelChannel()
	ps := w.store.Redis().Subscribe(ctx)
	if err := ps.Subscribe(ctx, ch); err != nil {
		_ = ps.Close()
		return nil, err
	}
	for {
		// The timeout bounds the read on a Redis client that does not
		// heed the context's deadline (see Options.Redis).
		m, err := ps.ReceiveTimeout(ctx, w.opts.OperationTimeout)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			_ = ps.Close()
			return nil, fmt.Errorf("confirming the subscription to %s: %w", ch, err)
		}
		if s, ok := m.(*redis.Subscription); ok && s.Kind == "subscribe" && s.Channel == ch {
			return ps, nil
		}
	}
}

// listenCancels cancels the context of a running handler as soon as its run
// is cancelled, reading the notices ps (from subscribeCancels) receives; it
// closes ps when quit closes. A notice missed while the connection is
// re-established is caught by the next heartbeat, which reports the run as
// ended (see beat and checkWaiting).
func (w *Worker) listenCancels(quit <-chan struct{}, ps *redis.PubSub) {
	defer ps.Close()
	msgs := make(chan *redis.Message)
	go func() {
		for {
			m, err := ps.ReceiveMessage(context.Background())
			if err != nil {
				select {
				case <-quit:
					return
				default:
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			select {
			case msgs <- m:
			case <-quit:
				return
			}
		}
	}()
	for {
		select {
		case <-quit:
			return
		case m := <-msgs:
			// The payload is the run ID, or "<run id>|<new owner>" when a
			// newer run superseded it.
			runID, by, superseded := strings.Cut(m.Payload, "|")
			w.mu.Lock()
			a := w.active[runID]
			w.mu.Unlock()
			switch {
			case a == nil:
			case superseded:
				a.cancel(&SupersededError{RunID: runID, By: by})
			default:
				a.cancel(ErrRunCancelled)
			}
		}
	}
}
