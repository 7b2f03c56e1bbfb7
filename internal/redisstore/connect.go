package redisstore

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConnectOptions say how a client or a worker reaches Redis.
type ConnectOptions struct {
	// Redis is a client the caller made; it is used as it is, timeouts
	// included, and the caller closes it.
	Redis redis.UniversalClient
	// URL (redis:// or rediss://) is dialled when Redis is nil.
	URL string
	// OperationTimeout bounds every call on a client dialled from URL:
	// see ClientOptions.
	OperationTimeout time.Duration
}

// Connect returns the Redis client a taskq client or worker works with:
// o.Redis, or else a new client for o.URL made with ClientOptions. owned
// says whether the caller made it here and so must close it. It is the one
// place the constructors set Redis up.
func Connect(o ConnectOptions) (rdb redis.UniversalClient, owned bool, err error) {
	if o.Redis != nil {
		return o.Redis, false, nil
	}
	ro, err := ClientOptions(o.URL, o.OperationTimeout)
	if err != nil {
		return nil, false, err
	}
	return redis.NewClient(ro), true, nil
}

// ClientOptions parses a Redis URL into go-redis options under which no
// call outlives its context's deadline, nor opTimeout when it has none:
//   - ContextTimeoutEnabled, so that go-redis sets each socket deadline
//     from the call's context. Without it a read or write waits its own
//     ReadTimeout or WriteTimeout whatever the deadline, and a call that
//     waited its turn for a connection, or had a round trip behind it,
//     took up to twice its deadline when Redis stopped answering.
//   - DialTimeout, ReadTimeout and WriteTimeout capped at opTimeout: go-redis
//     dials and greets a new connection in the background by these alone,
//     and calls without a deadline (Pub/Sub, a shutdown's last writes) use
//     them too. A timeout the URL sets lower is kept.
//
// A URL that does not parse gives an error that does not repeat the URL,
// which may hold a password.
func ClientOptions(rawURL string, opTimeout time.Duration) (*redis.Options, error) {
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("redis URL: %w", err)
	}
	ro.ContextTimeoutEnabled = true
	if opTimeout > 0 {
		for _, d := range []*time.Duration{&ro.DialTimeout, &ro.ReadTimeout, &ro.WriteTimeout} {
			if *d == 0 || *d > opTimeout {
				*d = opTimeout
			}
		}
	}
	return ro, nil
}
