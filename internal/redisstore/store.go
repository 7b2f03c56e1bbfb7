package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
)

// Store is the only place taskq talks to Redis: every state change of a run
// is one script here, and every key comes from Keys.
type Store struct {
	rdb redis.UniversalClient
	// keys are the home partition's.
	keys Keys
	// addr names the server in errors.
	addr string
	// plain is set once the server turned out unable to compile a
	// script's shebang line: scripts are sent without it from then on.
	plain atomic.Bool
	// noFunctions is set once the server turned out to have no functions
	// (see functions.go): scripts are sent with EVALSHA from then on.
	noFunctions atomic.Bool
	// sharded is set on a Redis Cluster: scripts publish their notices
	// with SPUBLISH and subscribers use SSUBSCRIBE (see Notices).
	sharded bool
	// suppressed bounds the suppressed-trigger records (nil: the
	// defaults; see suppressed.go).
	suppressed atomic.Pointer[engine.SuppressedLimits]
	// fanoutHooks are set by tests only (SetFanoutHooks).
	fanoutHooks atomic.Pointer[engine.FanoutHooks]
	// version is the server's, once read (see ServerVersion).
	version serverVersion
	// loaded holds the scripts loaded on each master for durable calls
	// (loadedKey, see loadOn).
	loaded sync.Map
	// want is the configured partition count (0: adopt the recorded one);
	// parts the namespace's layout once read (see Partitions), resolving
	// lets one call read it at a time.
	want      int
	parts     atomic.Pointer[Partitions]
	resolving chan struct{}
}

// New returns a Store for namespace ns on rdb, which adopts the
// namespace's partition count (see NewPartitioned).
func New(rdb redis.UniversalClient, ns string) *Store {
	_, sharded := rdb.(*redis.ClusterClient)
	return &Store{rdb: rdb, keys: NewKeys(ns), addr: Addr(rdb), sharded: sharded, resolving: make(chan struct{}, 1)}
}

// Addr names the server (or, for a cluster, the seed servers) rdb talks
// to, for error messages.
func Addr(rdb redis.UniversalClient) string {
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return strings.Join(c.Options().Addrs, ",")
	}
	return ""
}

// Keys returns the key builder of the store's namespace.
func (s *Store) Keys() Keys { return s.keys }

// Redis returns the underlying client.
func (s *Store) Redis() redis.UniversalClient { return s.rdb }

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }

func ms(d time.Duration) int64 { return d.Milliseconds() }

func unixMS(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

// --- results of scripts ---------------------------------------------------

func asSlice(v any) ([]any, error) {
	s, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("redisstore: unexpected script reply %T", v)
	}
	return s, nil
}

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}

// runScript runs sc, loading it when the server lacks it: as a Redis
// function on a server that has functions (see functions.go), else with
// EVALSHA. A script whose shebang the server cannot compile is sent
// without it, then and from then on: it runs as it would there without
// the flags.
func (s *Store) runScript(ctx context.Context, sc *script, keys []string, args ...any) (any, error) {
	if fn := s.functionOf(sc); fn != "" {
		if v, err := s.callFunction(ctx, sc, fn, keys, args...); !errors.Is(err, errNotAsFunction) {
			return v, s.named(sc.name, scriptError(err))
		}
	}
	run := s.variant(sc)
	v, err := run.Run(ctx, s.rdb, keys, args...).Result()
	if run != sc.plain && sc.plain != nil && shebangUnsupported(err) {
		s.plain.Store(true)
		v, err = sc.plain.Run(ctx, s.rdb, keys, args...).Result()
	}
	return v, s.named(sc.name, scriptError(err))
}

// MaxItemsPerCall bounds the items (triggers, deliveries, outcomes) one call
// of a batch script handles. A script holds Redis while it runs (the time
// per trigger is in docs/performance.md), so larger batches are sent as
// several calls, one after another.
const MaxItemsPerCall = 256

// evalBatch runs sc, a script that takes many items and replies with an
// array of values for items 0..n-1, in one call per group of items (the
// items of one partition, in order) and per MaxItemsPerCall items of a
// group: build gives the KEYS and ARGV of the items whose indexes it is
// handed (all of one group), and parse is handed the reply from item i's
// first value on and says how many values are item i's. The i-th error is
// the script's error for item i, or the error of the call that carried it.
// One call goes out alone; several go out in one pipeline (one round trip;
// Redis still runs them one after another).
func (s *Store) evalBatch(ctx context.Context, sc *script, groups [][]int, n int, build func(items []int) ([]string, []any), parse func(i int, r []any) (int, error)) []error {
	errs := make([]error, n)
	calls := batchCalls(groups, build)
	sent := make([]scriptCall, len(calls))
	for i, c := range calls {
		sent[i] = scriptCall{Keys: c.keys, Args: c.args}
	}
	s.runScripts(ctx, sc, sent)
	for k, c := range calls {
		parseCall(sc, c.items, sent[k].Reply, sent[k].Err, parse, errs)
	}
	return errs
}

// scriptBatchCall is one call of a batch script: the items it carries, and its
// KEYS and ARGV.
type scriptBatchCall struct {
	items []int
	keys  []string
	args  []any
}

// batchCalls splits groups of items into calls of at most MaxItemsPerCall
// items each, built by build.
func batchCalls(groups [][]int, build func(items []int) ([]string, []any)) []scriptBatchCall {
	var calls []scriptBatchCall
	for _, g := range groups {
		for lo := 0; lo < len(g); lo += MaxItemsPerCall {
			items := g[lo:min(lo+MaxItemsPerCall, len(g))]
			keys, args := build(items)
			calls = append(calls, scriptBatchCall{items: items, keys: keys, args: args})
		}
	}
	return calls
}

// parseCall hands the reply v (or the error err) of the call that carried
// items to parse, item by item, and sets their errors in errs.
func parseCall(sc *script, items []int, v any, err error, parse func(i int, r []any) (int, error), errs []error) {
	var r []any
	if err == nil {
		r, err = asSlice(v)
	}
	if err != nil {
		for _, i := range items {
			errs[i] = err
		}
		return
	}
	for k, i := range items {
		if len(r) == 0 {
			errs[i] = fmt.Errorf("redisstore: %s: no reply for item %d of %d", sc.name, k+1, len(items))
			continue
		}
		used, err := parse(i, r)
		errs[i] = err
		r = r[min(max(used, 1), len(r)):]
	}
	if len(r) != 0 {
		for _, i := range items {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("redisstore: %s: %d values left over in the reply", sc.name, len(r))
			}
		}
	}
}

// scriptCall is one call of a script sent by runScripts: its KEYS and
// ARGV, then its reply or error.
type scriptCall struct {
	Keys  []string
	Args  []any
	Reply any
	Err   error
}

// runScripts runs sc once per call, as runScript does: one call alone,
// several in one pipeline (each may be in another slot: a cluster client
// sends each to its node). A call whose script the server's cache lacks is
// sent again on its own, with the script.
func (s *Store) runScripts(ctx context.Context, sc *script, calls []scriptCall) {
	if len(calls) == 1 {
		c := &calls[0]
		c.Reply, c.Err = s.runScript(ctx, sc, c.Keys, c.Args...)
		return
	}
	if len(calls) == 0 {
		return
	}
	cmds := make([]*redis.Cmd, len(calls))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, c := range calls {
			cmds[i] = s.scriptCmd(ctx, p, sc, c.Keys, c.Args...)
		}
		return nil
	})
	for i := range calls {
		c := &calls[i]
		c.Reply, c.Err = cmds[i].Result()
		if s.needsResend(sc, c.Err) {
			// Not run: loaded (and sent on its own) now.
			c.Reply, c.Err = s.runScript(ctx, sc, c.Keys, c.Args...)
			continue
		}
		c.Err = s.named(sc.name, scriptError(c.Err))
	}
}

// groupByPartition groups items 0..n-1 by the partition part says each is
// in, keeping their order within a group; an item part says is in no
// partition gets that error in errs and no group. With one partition every
// item is in one group, with no allocation beyond it.
func groupByPartition(n, partitions int, part func(i int) (int, error), errs []error) [][]int {
	if partitions == 1 {
		all := make([]int, 0, n)
		for i := range n {
			if _, err := part(i); err != nil {
				errs[i] = err
				continue
			}
			all = append(all, i)
		}
		return [][]int{all}
	}
	byPart := make(map[int][]int, partitions)
	order := make([]int, 0, partitions)
	for i := range n {
		p, err := part(i)
		if err != nil {
			errs[i] = err
			continue
		}
		if _, ok := byPart[p]; !ok {
			order = append(order, p)
		}
		byPart[p] = append(byPart[p], i)
	}
	groups := make([][]int, len(order))
	for k, p := range order {
		groups[k] = byPart[p]
	}
	return groups
}

// keepFirst sets errs[i] to err where errs[i] is not set yet.
func keepFirst(errs, more []error) {
	for i, err := range more {
		if errs[i] == nil {
			errs[i] = err
		}
	}
}
