package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnavailable matches every *UnavailableError.
var ErrUnavailable = errors.New("redis unavailable")

// UnavailableError says Redis did not answer: it is down, unreachable, or
// slower than OperationTimeout. The outcome of a trigger that fails so is
// unknown (see docs/guarantees.md): retrying it with the same key is safe.
type UnavailableError struct {
	// Addr is the Redis address, when the client knows it.
	Addr string
	// Timeout is the client's OperationTimeout, which bounds every call
	// (a caller's earlier deadline bounds it more).
	Timeout time.Duration
	Err     error
}

func (e *UnavailableError) Error() string {
	addr := e.Addr
	if addr == "" {
		addr = "Redis"
	} else {
		addr = "Redis at " + addr
	}
	return fmt.Sprintf("%s did not answer (operation timeout %s): %v", addr, e.Timeout, e.Err)
}

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the underlying error (a deadline, a refused connection).
func (e *UnavailableError) Unwrap() error { return e.Err }

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
	if o, ok := c.store.Redis().(interface{ Options() *redis.Options }); ok {
		ue.Addr = o.Options().Addr
	}
	return ue
}
