package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/pkg/task"
)

// Store is the only place taskq talks to Redis: every state change of a run
// is one script here, and every key comes from Keys.
type Store struct {
	rdb  redis.UniversalClient
	keys Keys
	// addr names the server in errors.
	addr string
	// plain is set once the server turned out unable to compile a
	// script's shebang line: scripts are sent without it from then on.
	plain atomic.Bool
	// fanoutHooks are set by tests only (SetFanoutHooks).
	fanoutHooks atomic.Pointer[FanoutHooks]
	// version is the server's, once read (see ServerVersion).
	version serverVersion
	// loaded holds the scripts loaded on each master for durable calls
	// (loadedKey, see loadOn).
	loaded sync.Map
}

// New returns a Store for namespace ns on rdb.
func New(rdb redis.UniversalClient, ns string) *Store {
	return &Store{rdb: rdb, keys: NewKeys(ns), addr: Addr(rdb)}
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

// Strategy is the task's strategy (defined once, in package task), as the
// scripts store and read it.
type Strategy = task.Strategy

// The strategies a run is stored with: the task's, or StrategyNone for a
// run without an idempotency key, which is not deduplicated. StrategyNone
// is a storage value only, never a task's configuration.
const (
	StrategyNone     Strategy = "none"
	StrategyTTL               = task.StrategyTTL
	StrategyStatus            = task.StrategyStatus
	StrategyDebounce          = task.StrategyDebounce
)

// MaxSignalsDefault bounds the signals one run may hold.
const MaxSignalsDefault = 10000

// Run statuses as stored.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// IsTerminal reports whether status is final.
func IsTerminal(status string) bool {
	return status == StatusSucceeded || status == StatusFailed || status == StatusCancelled
}

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

// runScript runs sc, loading it when the server's cache lacks it. A
// script whose shebang the server cannot compile is sent without it, then
// and from then on: it runs as it would there without the flags.
func (s *Store) runScript(ctx context.Context, sc *script, keys []string, args ...any) (any, error) {
	run := sc.Script
	if sc.plain != nil && s.plain.Load() {
		run = sc.plain
	}
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
// array of values for items 0..n-1: build gives the KEYS and ARGV of items
// lo..hi-1, at most MaxItemsPerCall of them, and parse is handed the reply
// from item i's first value on and says how many values are item i's. The
// i-th error is the script's error for item i, or the error of the call
// that carried it.
func (s *Store) evalBatch(ctx context.Context, sc *script, n int, build func(lo, hi int) ([]string, []any), parse func(i int, r []any) (int, error)) []error {
	errs := make([]error, n)
	for lo := 0; lo < n; lo += MaxItemsPerCall {
		hi := min(lo+MaxItemsPerCall, n)
		keys, args := build(lo, hi)
		v, err := s.runScript(ctx, sc, keys, args...)
		parseCall(sc, lo, hi, v, err, parse, errs)
	}
	return errs
}

// parseCall hands the reply v (or the error err) of the call that carried
// items lo..hi-1 to parse, item by item, and sets their errors in errs.
func parseCall(sc *script, lo, hi int, v any, err error, parse func(i int, r []any) (int, error), errs []error) {
	var r []any
	if err == nil {
		r, err = asSlice(v)
	}
	if err != nil {
		for i := lo; i < hi; i++ {
			errs[i] = err
		}
		return
	}
	for i := lo; i < hi; i++ {
		if len(r) == 0 {
			errs[i] = fmt.Errorf("redisstore: %s: no reply for item %d of %d", sc.name, i-lo+1, hi-lo)
			continue
		}
		used, err := parse(i, r)
		errs[i] = err
		r = r[min(max(used, 1), len(r)):]
	}
	if len(r) != 0 {
		for i := lo; i < hi; i++ {
			if errs[i] == nil {
				errs[i] = fmt.Errorf("redisstore: %s: %d values left over in the reply", sc.name, len(r))
			}
		}
	}
}
