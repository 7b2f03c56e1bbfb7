package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/pkg/task"
)

// subscriber opens a Pub/Sub connection (a redis.UniversalClient does).
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// canceller cancels the context of a running handler as soon as its run is
// cancelled or superseded, from the namespace's cancel notices (one channel
// per partition, all on one subscription). A notice missed while the
// connection is re-established is caught by the next heartbeat, which
// reports the run as ended (see heartbeater).
type canceller struct {
	startStop
	sub       subscriber
	channels  []string
	active    *activeRuns
	opTimeout time.Duration
	log       *slog.Logger
}

// Start subscribes to the cancel notices and returns once Redis has
// confirmed it, within opTimeout: from then on no cancel is missed while
// the connection holds.
func (c *canceller) Start(ctx context.Context) error {
	if err := c.canStart(); err != nil {
		return err
	}
	ps, err := c.subscribe(ctx)
	if err != nil {
		return fmt.Errorf("worker: subscribe to cancel notices: %w", err)
	}
	if err := c.begin(func(quit <-chan struct{}) { c.listen(quit, ps) }); err != nil {
		_ = ps.Close()
		return err
	}
	return nil
}

func (c *canceller) subscribe(ctx context.Context) (*redis.PubSub, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout)
	defer cancel()
	ps := c.sub.Subscribe(ctx)
	if err := ps.Subscribe(ctx, c.channels...); err != nil {
		_ = ps.Close()
		return nil, err
	}
	waiting := make(map[string]bool, len(c.channels))
	for _, ch := range c.channels {
		waiting[ch] = true
	}
	for len(waiting) > 0 {
		// The timeout bounds the read on a Redis client that does not
		// heed the context's deadline (see Options.Redis).
		m, err := ps.ReceiveTimeout(ctx, c.opTimeout)
		if err == nil && ctx.Err() != nil {
			err = ctx.Err()
		}
		if err != nil {
			_ = ps.Close()
			return nil, fmt.Errorf("worker: confirm the subscription to %s: %w", strings.Join(c.channels, ", "), err)
		}
		if s, ok := m.(*redis.Subscription); ok && s.Kind == "subscribe" {
			delete(waiting, s.Channel)
		}
	}
	return ps, nil
}

// listen reads the notices ps receives until quit closes, then closes ps.
func (c *canceller) listen(quit <-chan struct{}, ps *redis.PubSub) {
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
			c.notice(m.Payload)
		}
	}
}

// notice cancels the handler of the run a notice names. The payload is the
// run ID, or "<run id>|<new owner>" when a newer run superseded it.
func (c *canceller) notice(payload string) {
	runID, by, superseded := strings.Cut(payload, "|")
	a := c.active.get(runID)
	switch {
	case a == nil:
	case superseded:
		a.cancel(&SupersededError{RunID: runID, By: by})
	default:
		a.cancel(task.ErrRunCancelled)
	}
}
