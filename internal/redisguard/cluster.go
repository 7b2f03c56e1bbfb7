package redisguard

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// ClusterNodeError says a client of one Redis server (a redis:// or
// rediss:// URL, or a *redis.Client) points at a node of a Redis Cluster.
// Such a client reaches that node only: depending on a namespace's slot,
// every call fails with MOVED, or everything seems to work while the
// namespace records one partition, which later cluster clients adopt. A
// cluster is reached with a redis+cluster:// URL (or a
// *redis.ClusterClient).
type ClusterNodeError struct {
	Addr string
}

// ErrClusterNode matches every *ClusterNodeError.
var ErrClusterNode = errors.New("redis: a node of a Redis Cluster reached as one server")

// Is makes errors.Is(err, ErrClusterNode) hold.
func (e *ClusterNodeError) Is(target error) bool { return target == ErrClusterNode }

func (e *ClusterNodeError) Error() string {
	return fmt.Sprintf("Redis at %s is a node of a Redis Cluster (cluster_enabled:1), and a redis:// URL reaches that "+
		"one node only: connect with redis+cluster://%s (rediss+cluster:// for TLS), which follows the cluster's slots",
		e.Addr, e.Addr)
}

// CheckNotClusterNode returns a *ClusterNodeError when rdb is a client of
// one server and that server is a cluster node. A server that does not
// answer INFO cluster (miniredis, a renamed or forbidden INFO) is taken
// for what it says it is; an error to reach it is returned as it is.
func CheckNotClusterNode(ctx context.Context, rdb redis.UniversalClient) error {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	info, err := c.Info(ctx, "cluster").Result()
	switch {
	case err != nil && declined(err):
		return nil
	case err != nil:
		return err
	}
	if infoFields(info)["cluster_enabled"] == "1" {
		return &ClusterNodeError{Addr: c.Options().Addr}
	}
	return nil
}
