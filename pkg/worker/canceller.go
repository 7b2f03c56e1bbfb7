package worker

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// listenCancels cancels the context of a running handler as soon as its run
// is cancelled. A notice missed while disconnected is caught by the next
// heartbeat, which reports the run as ended.
func (w *Worker) listenCancels(quit <-chan struct{}) {
	ps := w.store.Redis().Subscribe(context.Background(), w.store.Keys().CancelChannel())
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
