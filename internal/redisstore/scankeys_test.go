package redisstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// On a Redis holding far more keys of others than of the namespace, the
// first page of ScanKeys still holds every key of the namespace: SCAN
// calls go on, and grow, while they find nothing (a private server, as
// the test fills it with 20,000 keys).
func TestScanKeysPageReachesPastOtherKeys(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	for i := 0; i < 20000; i += 1000 {
		pairs := make([]any, 0, 2000)
		for j := i; j < i+1000; j++ {
			pairs = append(pairs, fmt.Sprintf("other:%d", j), "x")
		}
		if err := rdb.MSet(ctx, pairs...).Err(); err != nil {
			t.Fatal(err)
		}
	}
	s := redisstore.NewPartitioned(rdb, "scan", 1)
	var want []string
	for i := range 10 {
		key := fmt.Sprintf("order:%d", i)
		p := &engine.EnqueueParams{RunID: fmt.Sprintf("run-%d", i), Task: "t", Input: []byte(`{}`), Key: key,
			Strategy: engine.StrategyTTL, Hold: time.Hour, Now: time.Now()}
		if r, err := s.Enqueue(ctx, p); err != nil || !r.Accepted {
			t.Fatalf("enqueue %s: %+v, %v", key, r, err)
		}
		want = append(want, key)
	}
	got, _, err := s.ScanKeys(ctx, "*", "", 50)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	got = slices.Compact(got)
	if !slices.Equal(got, want) {
		t.Fatalf("first page = %v, want every key of the namespace %v", got, want)
	}
}
