package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/taskq/taskq/internal/cancelreason"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/pkg/task"
)

// subscriber makes a subscription to notices (an engine.Engine does:
// SUBSCRIBE on one Redis, SSUBSCRIBE on the master of each channel's slot
// on a cluster).
type subscriber interface {
	Notices() engine.Notices
}

// canceller cancels the context of a running handler as soon as its run is
// cancelled or superseded, from the namespace's cancel notices (one channel
// per partition, all on one subscription; on a cluster, one connection per
// master). The subscription is made again by itself after its connection
// breaks or, on a cluster, its master fails over; a notice missed
// meanwhile is caught by the next heartbeat, which reports the run as
// ended (see heartbeater).
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
	n, err := c.subscribe(ctx)
	if err != nil {
		return fmt.Errorf("worker: subscribe to cancel notices: %w", err)
	}
	if err := c.begin(func(quit <-chan struct{}) { c.listen(quit, n) }); err != nil {
		_ = n.Close()
		return err
	}
	return nil
}

func (c *canceller) subscribe(ctx context.Context) (engine.Notices, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opTimeout)
	defer cancel()
	n := c.sub.Notices()
	if err := n.Subscribe(ctx, c.channels...); err != nil {
		_ = n.Close()
		return nil, err
	}
	waiting := make(map[string]bool, len(c.channels))
	for _, ch := range c.channels {
		waiting[ch] = true
	}
	for len(waiting) > 0 {
		select {
		case nt := <-n.C():
			if nt.Kind == engine.NoticeSubscribed {
				delete(waiting, nt.Channel)
			}
		case <-ctx.Done():
			_ = n.Close()
			return nil, fmt.Errorf("worker: confirm the subscription to %s: %w", strings.Join(c.channels, ", "), ctx.Err())
		}
	}
	return n, nil
}

// listen reads the notices n receives until quit closes, then closes n.
func (c *canceller) listen(quit <-chan struct{}, n engine.Notices) {
	defer n.Close()
	for {
		select {
		case <-quit:
			return
		case nt := <-n.C():
			switch nt.Kind {
			case engine.NoticeMessage:
				c.notice(nt.Payload)
			case engine.NoticeInterrupted:
				c.log.Debug("taskq: cancel subscription interrupted; subscribing again", "channels", len(nt.Channels))
			}
		}
	}
}

// notice cancels the handler of the run a notice names. The payload is the
// run ID, "<run id>|<new owner>" when a newer run superseded it, or
// "<run id>|<reason>" when its concurrency group cancelled it.
func (c *canceller) notice(payload string) {
	runID, by, superseded := strings.Cut(payload, "|")
	a := c.active.get(runID)
	cause, byGroup := concurrencyCause(runID, by)
	switch {
	case a == nil:
	case superseded && byGroup:
		a.cancel(cause)
	case superseded:
		a.cancel(endedCause(runID, cancelreason.Superseded(by)))
	default:
		a.cancel(task.ErrRunCancelled)
	}
}
