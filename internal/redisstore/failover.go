package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// followFailovers makes a cluster client look its map of the cluster up
// again whenever a call fails in a way that says the node it went to may
// no longer serve the slot: the connection failed or broke, the node did
// not answer in time, or the cluster said it is down (CLUSTERDOWN, while a
// failover is being decided).
//
// go-redis reloads the map by itself only on MOVED and ASK, which a dead
// master never sends, and otherwise every ClusterStateReloadInterval (a
// minute by default): after a master is killed and its replica promoted,
// every call for the master's slots went on to the dead address, failing,
// until that reload, long after the cluster had recovered. A reload is a
// CLUSTER SLOTS on one node, at most one at a time and one per 200ms
// whatever the number of failed calls (go-redis's LazyReload), so during
// the failover the client keeps asking until some node names the promoted
// replica.
type followFailovers struct{ cc *redis.ClusterClient }

// FollowFailovers adds the hook that reloads rdb's map of the cluster
// after failed calls, when rdb is a cluster client; Connect does it for
// the clients and workers. It does nothing to other clients.
func FollowFailovers(rdb redis.UniversalClient) {
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.AddHook(followFailovers{cc})
	}
}

func (f followFailovers) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f followFailovers) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		f.after(err)
		return err
	}
}

func (f followFailovers) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		f.after(err)
		return err
	}
}

// after reloads the map when err says the node may be gone.
func (f followFailovers) after(err error) {
	if nodeMayBeGone(err) {
		f.cc.ReloadState(context.Background())
	}
}

// nodeMayBeGone reports whether err, a call's error, leaves it open that
// the node it went to no longer serves the slot: anything but a reply of
// Redis's own (a Nil, a script's error) and the caller's own cancellation,
// or a CLUSTERDOWN reply. A closed client has nothing to reload.
func nodeMayBeGone(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return strings.HasPrefix(err.Error(), "CLUSTERDOWN")
	}
	return true
}
