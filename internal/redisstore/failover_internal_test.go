package redisstore

import (
	"context"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
)

// A cluster client looks its map up again after an error that leaves it
// open that the node is gone (no answer, a broken or refused connection,
// the cluster down while a failover is decided), and not after Redis's own
// replies or the caller's cancellation.
func TestNodeMayBeGone(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, c := range []struct {
		err  error
		gone bool
	}{
		{nil, false},
		{redis.Nil, false},
		{proto("TASKQ_WRONGTYPE run record"), false},
		{proto("NOSCRIPT No matching script"), false},
		{proto("MOVED 3999 127.0.0.1:6381"), false}, // go-redis reloads on these itself
		{proto("CLUSTERDOWN The cluster is down"), true},
		{context.Canceled, false},
		{fmt.Errorf("read: %w", context.Canceled), false},
		{context.DeadlineExceeded, true},
		{io.EOF, true},
		{dial, true},
		{fmt.Errorf("redis: connection pool: failed to dial after 5 attempts: %w", dial), true},
		{redis.ErrClosed, false},
	} {
		if got := nodeMayBeGone(c.err); got != c.gone {
			t.Errorf("nodeMayBeGone(%v) = %v; want %v", c.err, got, c.gone)
		}
	}
}

// proto is an error reply of Redis's.
type proto string

func (e proto) Error() string { return string(e) }
func (proto) RedisError()     {}
