package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// ErrUnavailable matches every *UnavailableError, and the errors of a
// Redis that answers but cannot write now: ErrOutOfMemory (at
// maxmemory) and ErrRedisReadOnly (a replica, after a failover). Retrying
// later is safe for all of them.
var ErrUnavailable = engine.ErrUnavailable

// UnavailableError says Redis did not answer: it is down, unreachable
// (its message says "refused the connection" when nothing listened at its
// address), or slower than OperationTimeout. The outcome of a trigger that fails so is
// unknown (see docs/guarantees.md): retrying it with the same key is safe.
type UnavailableError struct {
	// Addr is the Redis address, when the client knows it.
	Addr string
	// Timeout is the client's OperationTimeout, which bounds every call
	// (a caller's earlier deadline bounds it more).
	Timeout time.Duration
	Err     error
	// DialErr is why the last attempt to connect failed, when one failed
	// during the call: what a deadline in Err hides (a refused connection,
	// an unknown host).
	DialErr error
}

// Error names the Redis that did not answer, the timeout, and why.
func (e *UnavailableError) Error() string {
	addr := e.Addr
	if addr == "" {
		addr = "Redis"
	} else {
		addr = "Redis at " + addr
	}
	// A refused connection says so first: nothing waited for a timeout.
	switch {
	case errors.Is(e.Err, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s refused the connection: %v", addr, e.Err)
	case errors.Is(e.DialErr, syscall.ECONNREFUSED):
		return fmt.Sprintf("%s refused the connection: %v (the call ended: %v)", addr, e.DialErr, e.Err)
	}
	msg := fmt.Sprintf("%s did not answer (operation timeout %s): %v", addr, e.Timeout, e.Err)
	if e.DialErr != nil {
		msg += "; connecting failed: " + e.DialErr.Error()
	}
	return msg
}

// Unwrap returns ErrUnavailable (so that errors.Is matches it) and the
// underlying errors (a deadline, a refused connection).
func (e *UnavailableError) Unwrap() []error {
	if e.DialErr != nil {
		return []error{ErrUnavailable, e.Err, e.DialErr}
	}
	return []error{ErrUnavailable, e.Err}
}

// dialRecorder is a go-redis hook that remembers the last failed dial, so
// that an error that ends in a deadline can still say why Redis could not
// be reached.
type dialRecorder struct {
	last atomic.Pointer[dialFailure]
}

type dialFailure struct {
	err error
	at  time.Time
}

func (d *dialRecorder) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			d.last.Store(&dialFailure{err: err, at: time.Now()})
		} else {
			d.last.Store(nil)
		}
		return conn, err
	}
}

func (d *dialRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (d *dialRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// since returns the last dial failure if it happened after t.
func (d *dialRecorder) since(t time.Time) error {
	if f := d.last.Load(); f != nil && !f.at.Before(t) {
		return f.err
	}
	return nil
}

// unavailable turns an error that means "Redis did not answer" into an
// *UnavailableError naming the address and the time allowed; any other
// error is returned as it is. A caller's own cancellation stays as it is.
func (c *Client) unavailable(_ context.Context, err error) error {
	if err == nil || errors.Is(err, context.Canceled) {
		return err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, io.EOF), errors.Is(err, redis.ErrClosed):
	default:
		return err
	}
	ue := &UnavailableError{Timeout: c.opts.OperationTimeout, Err: err}
	if c.dials != nil && !errors.Is(err, syscall.ECONNREFUSED) {
		// A dial failure within the time the call had is its cause.
		ue.DialErr = c.dials.since(time.Now().Add(-c.opts.OperationTimeout))
	}
	if o, ok := c.conn.Redis.(interface{ Options() *redis.Options }); ok {
		ue.Addr = o.Options().Addr
	}
	return ue
}
