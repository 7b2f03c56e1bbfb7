package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// BenchmarkEnqueueDurability triggers one run per call on a master of its
// own with one replica: without durability (the path every trigger took
// before it existed), and with one replica to wait for. Besides the time
// it reports the round trips (script calls and pipelines) and WAITs per
// trigger, which do not depend on the machine's load:
//
//	go test -run '^$' -bench EnqueueDurability -benchtime 5000x ./internal/redisstore/
func BenchmarkEnqueueDurability(b *testing.B) {
	m := redistest.StartServer(b, "--repl-diskless-sync-delay", "0", "--appendonly", "no")
	redistest.StartReplica(b, m, "--appendonly", "no")
	for _, c := range []struct {
		name string
		d    engine.Durability
	}{
		{"off", engine.Durability{}},
		{"replicas=1", engine.Durability{Replicas: 1, Timeout: time.Second}},
	} {
		b.Run(c.name, func(b *testing.B) {
			hook := newCommandCounter()
			rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
			defer rdb.Close()
			ns := redistest.Namespace(b)
			s := redisstore.New(rdb, ns)
			ctx := context.Background()
			now := time.Now()
			params := func(i int) *engine.EnqueueParams {
				return &engine.EnqueueParams{RunID: fmt.Sprint(c.name, "-", i), Task: "bench", Input: []byte(`{}`),
					Key: fmt.Sprint(c.name, "-", i), Strategy: engine.StrategyStatus, Hold: time.Hour, MaxDeliveries: 3,
					Retention: time.Hour, Now: now, Durability: c.d}
			}
			if _, err := s.Enqueue(ctx, params(-1)); err != nil { // the script cached, a connection open
				b.Fatal(err)
			}
			rdb.AddHook(hook)
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Enqueue(ctx, params(i)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			n := float64(b.N)
			hook.mu.Lock()
			b.ReportMetric(float64(hook.singles+hook.pipelines)/n, "roundtrips/op")
			hook.mu.Unlock()
			b.ReportMetric(float64(hook.count("wait"))/n, "waits/op")
			redistest.DeleteNamespace(ctx, rdb, ns)
		})
	}
}
