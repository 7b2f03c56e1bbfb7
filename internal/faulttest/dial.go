package faulttest

import (
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/redisstore"
)

// Dial returns a client for url: a cluster client for a redis+cluster://
// URL (see redisstore.IsClusterURL), made with the options a taskq client
// dialling it would use, and otherwise a client of one server with
// go-redis's own options for the URL, as the single-node fault tests have
// always used.
func Dial(url string) (redis.UniversalClient, error) {
	if redisstore.IsClusterURL(url) {
		co, err := redisstore.ClusterOptions(url, 0)
		if err != nil {
			return nil, err
		}
		return redis.NewClusterClient(co), nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// AddHook adds h to rdb so that it sees every command sent to a server
// once. On a cluster client it goes on each node's client (OnNewNode):
// a hook on the cluster client itself misses the calls the store sends
// through a node's client (durable triggers' pipelines), and sees a command
// once however many nodes it was sent to.
func AddHook(rdb redis.UniversalClient, h redis.Hook) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(n *redis.Client) { n.AddHook(h) })
		return
	}
	rdb.AddHook(h)
}
