package webui

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/clientlink"
	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redistest"
)

// benchRuns is how many runs the page benchmark fills its Redis with.
const benchRuns = 100_000

// BenchmarkPagesWith100kRuns measures the server time of the dashboard's
// pages (the overview with its charts and queue counts, the run lists, a
// run's page, a task's page) with 100,000 runs present, on a private
// redis-server: each sub-benchmark's ns/op is one page, served and read
// over loopback. Run it with make bench-ui; the target is under 200 ms a
// page.
func BenchmarkPagesWith100kRuns(b *testing.B) {
	srv := redistest.StartServer(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	b.Cleanup(func() { _ = rdb.Close() })
	e := newEnv(b, &redistest.Backend{Name: "private", Client: rdb, Namespace: "bench", URL: srv.URL()}, envOptions{})
	ctx := context.Background()
	store := clientlink.Store(e.c)
	start := time.Now()
	var some string
	for i := 0; i < benchRuns; i += 1000 {
		ps := make([]*engine.EnqueueParams, 1000)
		for j := range ps {
			n := i + j
			ps[j] = &engine.EnqueueParams{RunID: uuid.NewString(), Task: orderTask.Name(),
				Input: fmt.Appendf(nil, `{"id":"b-%d","amount":%d}`, n, n), Meta: []byte(`{}`),
				Key: fmt.Sprintf("order:b-%d", n), Strategy: engine.StrategyStatus, Hold: time.Hour,
				MaxDeliveries: 10, Retention: time.Hour, Now: time.Now()}
		}
		_, errs := store.EnqueueBatch(ctx, ps)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
		if some == "" {
			some = ps[500].RunID
		}
	}
	b.Logf("%d runs written in %v", benchRuns, time.Since(start).Round(time.Millisecond))
	br := e.browser()
	br.signIn(testToken)
	for _, p := range []struct{ name, path string }{
		{"overview", "/ui/"},
		{"runs", "/ui/runs"},
		{"runs-of-task", "/ui/runs?task=" + orderTask.Name()},
		{"runs-queued", "/ui/runs?status=queued"},
		{"run", "/ui/runs/" + some},
		{"task", "/ui/tasks/" + orderTask.Name()},
	} {
		b.Run(p.name, func(b *testing.B) {
			for b.Loop() {
				if pg := br.get(p.path); pg.status != http.StatusOK {
					b.Fatalf("GET %s: %d\n%.2000s", p.path, pg.status, pg.body)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/page")
		})
	}
}
