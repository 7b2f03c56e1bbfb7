// Package redispeek names the Redis keys behind an engine, for tests that
// corrupt or watch one key of the Redis layout from outside the store
// (a key of the wrong type, a channel's subscribers). Everything else a
// test needs goes through the engine contract.
package redispeek

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// IdempotencyKey is the Redis key that holds idempotency key key in e's
// namespace, e being a Redis engine.
func IdempotencyKey(ctx context.Context, e engine.Engine, key string) (string, error) {
	st := redisstore.StoreOf(e)
	if st == nil {
		return "", fmt.Errorf("redispeek: %T is not a Redis engine", e)
	}
	ks, err := st.KeyKeys(ctx, key)
	if err != nil {
		return "", err
	}
	return ks.IdempotencyKey(key), nil
}

// RunRecord is the Redis key of run runID's record in e's namespace, e
// being a Redis engine.
func RunRecord(ctx context.Context, e engine.Engine, runID string) (string, error) {
	st := redisstore.StoreOf(e)
	if st == nil {
		return "", fmt.Errorf("redispeek: %T is not a Redis engine", e)
	}
	ks, err := st.RunKeys(ctx, runID)
	if err != nil {
		return "", err
	}
	return ks.Run(runID), nil
}

// Store is the Redis store under e, for a test that reads the layout
// itself; it fails the test's assumption (panics) for any other engine.
func Store(e engine.Engine) *redisstore.Store {
	st := redisstore.StoreOf(e)
	if st == nil {
		panic(fmt.Sprintf("redispeek: %T is not a Redis engine", e))
	}
	return st
}

// ConcurrencyHolders is the Redis key of the holders of a task's
// concurrency group in e's namespace, e being a Redis engine.
func ConcurrencyHolders(ctx context.Context, e engine.Engine, task, group string) (string, error) {
	ks, err := Store(e).ConcurrencyKeys(ctx, task, group)
	if err != nil {
		return "", err
	}
	return ks.ConcurrencyHolders(task, group), nil
}

// RateLimitLog is the Redis key of the log of rate limit name for key
// in e's namespace ns, e being a Redis engine.
func RateLimitLog(ctx context.Context, e engine.Engine, ns, name, key string) (string, error) {
	parts, err := Store(e).Partitions(ctx)
	if err != nil {
		return "", err
	}
	return parts.Keys(redisstore.RateLimitPartition(ns, name, key, parts.Count())).RateLimit(name, key), nil
}

// Slot is the Redis Cluster hash slot of key.
func Slot(key string) int { return redisstore.Slot(key) }

// StreamKey is the Redis key of task's stream in partition 0 of
// namespace ns.
func StreamKey(ns, task string) string { return redisstore.NewKeys(ns).Stream(task) }

// EnqueueTriggers is how many triggers cmd carries when it is a call of
// the enqueue script, else 0: for tests that watch how triggers are
// batched into calls.
func EnqueueTriggers(cmd redis.Cmder) int {
	a := cmd.Args()
	if len(a) < 3 || !redistest.IsScriptCall(strings.ToLower(fmt.Sprint(a[0]))) || redisstore.ScriptNames()[fmt.Sprint(a[1])] != "enqueue" {
		return 0
	}
	n, _ := strconv.Atoi(fmt.Sprint(a[2]))
	argv := make([]string, 0, len(a))
	for _, v := range a[min(3+n, len(a)):] {
		argv = append(argv, fmt.Sprint(v))
	}
	return len(redisstore.EnqueueItems(argv))
}
