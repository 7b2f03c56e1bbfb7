// Package connect makes the connection a client, a worker or the CLI works
// through: it dials Redis (or takes the caller's client) and picks the
// storage engine for it. It is the one place above the engine contract
// (internal/engine) that names an implementation.
package connect

import (
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
)

// Schemes lists every scheme a Redis URL may have, for messages and help.
const Schemes = redisstore.Schemes

// Options say how to reach the store and which namespace to serve.
type Options struct {
	// Redis is a client the caller made; it is used as it is, timeouts
	// included, and the caller closes it.
	Redis redis.UniversalClient
	// URL (see Schemes) is dialled when Redis is nil.
	URL string
	// OperationTimeout bounds every call on a client dialled from URL.
	OperationTimeout time.Duration
	// Namespace is the namespace served.
	Namespace string
	// Partitions is the partition count asked for (0: the namespace's
	// recorded count, or the default).
	Partitions int
}

// Conn is an engine and the Redis client under it.
type Conn struct {
	// Engine is the storage engine.
	Engine engine.Engine
	// Redis is the client the engine works through: for the memory guard,
	// dial hooks and server facts.
	Redis redis.UniversalClient
	owned bool
}

// Open connects as o says. Nothing is sent to Redis yet.
func Open(o Options) (*Conn, error) {
	rdb, owned, err := redisstore.Connect(redisstore.ConnectOptions{
		Redis: o.Redis, URL: o.URL, OperationTimeout: o.OperationTimeout,
	})
	if err != nil {
		return nil, err
	}
	return &Conn{Engine: redisstore.NewPartitioned(rdb, o.Namespace, o.Partitions).Engine(), Redis: rdb, owned: owned}, nil
}

// Owned says whether Open dialled the Redis client, so Close closes it.
func (c *Conn) Owned() bool { return c.owned }

// Close closes the Redis client if Open dialled it.
func (c *Conn) Close() error {
	if !c.owned {
		return nil
	}
	return c.Redis.Close()
}

// IsClusterURL reports whether u names a Redis Cluster.
func IsClusterURL(u string) bool { return redisstore.IsClusterURL(u) }

// Engine is the engine over rdb, a Redis client the caller owns, for
// namespace ns with the partition count it recorded (or the default).
func Engine(rdb redis.UniversalClient, ns string) engine.Engine {
	return redisstore.New(rdb, ns).Engine()
}
