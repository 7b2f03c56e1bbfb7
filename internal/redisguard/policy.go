// Package redisguard checks that the Redis taskq runs on never evicts
// keys, and reads how much memory it has left.
//
// taskq's promise (exactly the runs that should happen) rests on Redis
// never dropping a key: an evicted idempotency key lets a duplicate run
// again, an evicted run record loses a run. Redis drops keys only under a
// maxmemory-policy other than noeviction, so a Guard reads the policy of
// every master when a client, a worker or the server starts, refuses any
// other (unless the risk is accepted), and reads it again periodically so
// that a policy changed at run time is noticed. See docs/operations.md.
package redisguard

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// PolicyNoEviction is the only maxmemory-policy under which Redis never
// drops a key: at maxmemory it refuses writes instead.
const PolicyNoEviction = "noeviction"

// ErrEvictingPolicy matches every *EvictingPolicyError and
// *PolicyUnknownError: a Redis that may evict taskq's keys, or one that
// does not say whether it may.
var ErrEvictingPolicy = errors.New("redis may evict taskq's keys")

// EvictingPolicyError says a Redis master has a maxmemory-policy under
// which it evicts keys once it reaches maxmemory.
type EvictingPolicyError struct {
	Addr   string
	Policy string
}

func (e *EvictingPolicyError) Error() string {
	return fmt.Sprintf("Redis at %s has maxmemory-policy %s: at maxmemory it evicts keys, so duplicates of evicted "+
		"idempotency keys run again and evicted runs vanish without a word. Set maxmemory-policy %s "+
		"(CONFIG SET maxmemory-policy %s, or the parameter of your managed Redis), or accept the risk with "+
		"AllowEvictingRedis (--allow-evicting-redis)", e.Addr, e.Policy, PolicyNoEviction, PolicyNoEviction)
}

// Is makes errors.Is(err, ErrEvictingPolicy) hold.
func (e *EvictingPolicyError) Is(target error) bool { return target == ErrEvictingPolicy }

// PolicyUnknownError says a Redis master answered but told neither through
// CONFIG GET nor through INFO memory which maxmemory-policy it has.
type PolicyUnknownError struct {
	Addr string
	// Err says why each way of asking failed.
	Err error
}

func (e *PolicyUnknownError) Error() string {
	return fmt.Sprintf("cannot read the maxmemory-policy of Redis at %s (%v); taskq needs %s. Allow taskq's user "+
		"INFO or CONFIG GET (ACL SETUSER <user> +info), or accept the risk with AllowEvictingRedis (--allow-evicting-redis)",
		e.Addr, e.Err, PolicyNoEviction)
}

// Is makes errors.Is(err, ErrEvictingPolicy) hold.
func (e *PolicyUnknownError) Is(target error) bool { return target == ErrEvictingPolicy }

// Unwrap returns why the policy could not be read.
func (e *PolicyUnknownError) Unwrap() error { return e.Err }

// Where a node's policy was read from.
const (
	SourceConfig   = "config"   // CONFIG GET
	SourceInfo     = "info"     // INFO memory, where CONFIG is disabled (managed services)
	SourceEmbedded = "embedded" // an embedded server that never evicts (miniredis)
)

// Node is what one check read of one Redis master.
type Node struct {
	Addr string
	// Policy is the maxmemory-policy ("" for an embedded server).
	Policy string
	// Source says where Policy was read from.
	Source string
	// UsedMemory and MaxMemory are used_memory and maxmemory in bytes, as
	// INFO memory tells them (MaxMemory 0: no limit); both 0 when unknown.
	UsedMemory int64
	MaxMemory  int64
}

// Evicting reports whether the node may evict keys.
func (n Node) Evicting() bool { return n.Source != SourceEmbedded && n.Policy != PolicyNoEviction }

// ReadNode reads the maxmemory-policy and the memory figures of one
// server. The policy comes from CONFIG GET, or from INFO memory where
// CONFIG is disabled, as on managed services. A server that answers
// neither and whose INFO names no redis_version is an embedded test
// server without eviction (miniredis, which taskq dev runs). The error is
// a *PolicyUnknownError when the server answered but told no policy, and
// the error of the call when it did not answer.
func ReadNode(ctx context.Context, c *redis.Client) (Node, error) {
	n := Node{Addr: c.Options().Addr}
	cfg, cerr := c.ConfigGet(ctx, "maxmemory*").Result()
	if cerr == nil {
		if p, ok := cfg["maxmemory-policy"]; ok && p != "" {
			n.Policy, n.Source = p, SourceConfig
		}
		n.MaxMemory, _ = strconv.ParseInt(cfg["maxmemory"], 10, 64)
	} else if !declined(cerr) {
		return n, cerr
	}
	info, ierr := c.Info(ctx, "memory").Result()
	if ierr == nil {
		f := infoFields(info)
		n.UsedMemory, _ = strconv.ParseInt(f["used_memory"], 10, 64)
		if v, ok := f["maxmemory"]; ok {
			n.MaxMemory, _ = strconv.ParseInt(v, 10, 64)
		}
		if p := f["maxmemory_policy"]; n.Policy == "" && p != "" {
			n.Policy, n.Source = p, SourceInfo
		}
	} else if !declined(ierr) {
		return n, ierr
	}
	if n.Policy != "" {
		return n, nil
	}
	all, aerr := c.Info(ctx).Result()
	switch {
	case aerr == nil && !strings.Contains(all, "redis_version:"):
		n.Source = SourceEmbedded
		return n, nil
	case aerr != nil && !declined(aerr):
		return n, aerr
	}
	why := []error{fmt.Errorf("CONFIG GET maxmemory-policy: %w", orNone(cerr, "no such parameter")),
		fmt.Errorf("INFO memory: %w", orNone(ierr, "no maxmemory_policy field"))}
	return n, &PolicyUnknownError{Addr: n.Addr, Err: errors.Join(why...)}
}

func orNone(err error, none string) error {
	if err == nil {
		return errors.New(none)
	}
	return err
}

// declined reports whether err is the server declining the command
// itself (unknown or renamed, not permitted to the user, an unsupported
// section) rather than a failure to reach or use it at all: a connection
// error, a refused login, a server still loading.
func declined(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	for _, p := range []string{"NOAUTH", "WRONGPASS", "LOADING", "BUSY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if strings.HasPrefix(err.Error(), p) {
			return false
		}
	}
	return true
}

// infoFields parses the name:value lines of an INFO reply.
func infoFields(info string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok && !strings.HasPrefix(k, "#") {
			m[k] = v
		}
	}
	return m
}

// ForEachMaster calls fn, concurrently, for every master rdb writes to:
// the one server of a *redis.Client (a failover client is one too), each
// master of a *redis.ClusterClient, each shard of a *redis.Ring.
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, c *redis.Client) error) error {
	switch c := rdb.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	case *redis.Ring:
		return c.ForEachShard(ctx, fn)
	}
	return fmt.Errorf("redisguard: cannot list the servers behind a %T", rdb)
}

// ReadAll reads every master of rdb (see ReadNode), in address order. A
// master that could not be read is left out and its error joined into the
// error returned.
func ReadAll(ctx context.Context, rdb redis.UniversalClient) ([]Node, error) {
	var (
		mu    sync.Mutex
		nodes []Node
		errs  []error
	)
	err := ForEachMaster(ctx, rdb, func(ctx context.Context, c *redis.Client) error {
		n, err := ReadNode(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			var pu *PolicyUnknownError
			if !errors.As(err, &pu) {
				err = fmt.Errorf("Redis at %s: %w", n.Addr, err)
			}
			errs = append(errs, err)
			return nil
		}
		nodes = append(nodes, n)
		return nil
	})
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Addr < nodes[j].Addr })
	return nodes, errors.Join(append(errs, err)...)
}

// Verdict is why nodes are unsafe for taskq: an *EvictingPolicyError for
// the first master that may evict, or nil.
func Verdict(nodes []Node) error {
	for _, n := range nodes {
		if n.Evicting() {
			return &EvictingPolicyError{Addr: n.Addr, Policy: n.Policy}
		}
	}
	return nil
}
