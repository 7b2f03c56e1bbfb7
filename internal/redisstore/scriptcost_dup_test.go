//go:build scriptcost

package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
)

// TestDuplicateScriptCost counts the instructions redis-server executes per
// trigger rejected as a duplicate (its key already held, policy reject),
// batched as the client batches them (16 per call) and one per call (as
// with batching off), beside a trigger that is accepted: the duplicate
// path a suppressed-trigger record adds to.
func TestDuplicateScriptCost(t *testing.T) {
	const n, batch = 2000, 16
	s := startCallgrind(t)
	ctx := context.Background()
	st := redisstore.New(s.rdb, "cost")
	if err := st.EnsureGroup(ctx, "noop"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	trigger := func(from, to int, round string, accepted bool) {
		ps := make([]*engine.EnqueueParams, 0, to-from)
		for i := from; i < to; i++ {
			id := fmt.Sprintf("run-%06d", i)
			ps = append(ps, &engine.EnqueueParams{RunID: id + round, Task: "noop", Input: []byte(`{"id":"` + id + `"}`),
				Meta: []byte(`{}`), Key: "order-" + id, Strategy: engine.StrategyStatus, Hold: time.Hour,
				MaxDeliveries: 10, Retention: 24 * time.Hour, Now: now})
		}
		res, errs := st.EnqueueBatch(ctx, ps)
		for i := range ps {
			if errs[i] != nil || res[i].Accepted != accepted {
				t.Fatalf("trigger %d: %+v, %v", from+i, res[i], errs[i])
			}
		}
	}
	// The script is loaded (EVAL, then cached) before anything is counted.
	trigger(-1, 0, "", true)
	trigger(-1, 0, "-dup", false)
	enq := s.measure("trigger", func() {
		for i := 0; i < n; i += batch {
			trigger(i, i+batch, "", true)
		}
	})
	dup := s.measure("duplicate", func() {
		for i := 0; i < n; i += batch {
			trigger(i, i+batch, "-dup", false)
		}
	})
	single := s.measure("duplicate, one per call", func() {
		for i := 0; i < n; i++ {
			trigger(i, i+1, "-dup1", false)
		}
	})
	// The same duplicates with suppressed triggers not recorded: what a
	// record adds to the duplicate path.
	st.SetSuppressedLimits(engine.SuppressedLimits{Cap: -1})
	trigger(-1, 0, "-bare", false)
	dupBare := s.measure("duplicate, not recorded", func() {
		for i := 0; i < n; i += batch {
			trigger(i, i+batch, "-bare", false)
		}
	})
	singleBare := s.measure("duplicate, one per call, not recorded", func() {
		for i := 0; i < n; i++ {
			trigger(i, i+1, "-bare1", false)
		}
	})
	pct := func(with, without int64) float64 { return 100 * (float64(with)/float64(without) - 1) }
	t.Logf("instructions per trigger in redis-server, %d triggers, %d per call:", n, batch)
	t.Logf("  trigger, accepted (enqueue.lua)        %8.0f", float64(enq)/n)
	t.Logf("  trigger, rejected as a duplicate       %8.0f  (%+.1f%% for its suppressed-trigger record)",
		float64(dup)/n, pct(dup, dupBare))
	t.Logf("  the same, one trigger per call         %8.0f  (%+.1f%%)", float64(single)/n, pct(single, singleBare))
	t.Logf("  duplicate, not recorded                %8.0f", float64(dupBare)/n)
	t.Logf("  the same, one trigger per call         %8.0f", float64(singleBare)/n)
}
