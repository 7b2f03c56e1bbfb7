package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// mastersOf returns the masters that serve the partitions of s, each named
// by its address, and the partitions each serves.
func mastersOf(t *testing.T, cc *redis.ClusterClient, s *redisstore.Store) map[string][]int {
	t.Helper()
	ctx := context.Background()
	parts, err := s.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]int{}
	for p := range parts.Count() {
		m, err := cc.MasterForKey(ctx, parts.Keys(p).Run("x"))
		if err != nil {
			t.Fatal(err)
		}
		out[m.Options().Addr] = append(out[m.Options().Addr], p)
	}
	return out
}

// On a cluster a batch across every partition goes out as one call per
// master, of the script's multi function, each carrying the items of every
// partition that master serves; each item gets its own reply: a second
// batch of the same keys, in another order, meets the runs the first
// created, each its own.
func TestBatchIsOneCallPerMasterOnACluster(t *testing.T) {
	t.Parallel()
	b := redistest.Cluster(t)
	log := newScriptLog()
	b.Client.AddHook(log)
	f := newFixture(t, b)
	s := redisstore.NewPartitioned(b.Client, b.Namespace+"-multi", 16)
	masters := mastersOf(t, b.Client.(*redis.ClusterClient), s)
	if len(masters) < 2 {
		t.Fatalf("16 partitions on %d masters", len(masters))
	}
	keys := make([]string, 96)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
	}
	first := f.statusRuns("multi", keys...)
	res, errs := s.EnqueueBatch(f.ctx, first)
	touched := map[int]bool{}
	parts, _ := s.Partitions(f.ctx)
	for i, p := range first {
		if errs[i] != nil || res[i].Outcome != engine.TriggerCreated {
			t.Fatalf("trigger %d: %+v, %v", i, res[i], errs[i])
		}
		part, _ := parts.OfRun(p.RunID)
		touched[part] = true
	}
	if len(touched) < 8 {
		t.Fatalf("96 keys touched only %d partitions", len(touched))
	}
	calls := log.take()
	multi := 0
	for _, c := range calls {
		if c.script != "enqueue" || !c.ran {
			t.Errorf("call %+v", c)
		}
		multi++
	}
	if multi != len(masters) {
		t.Errorf("%d enqueue calls for a batch over %d masters, want one each: %+v", multi, len(masters), calls)
	}

	// The same keys backwards: each trigger meets the run its key's first
	// trigger created.
	again := make([]*engine.EnqueueParams, len(keys))
	for i := range keys {
		again[i] = f.params("multi", keys[len(keys)-1-i], engine.StrategyStatus)
	}
	res, errs = s.EnqueueBatch(f.ctx, again)
	for i := range again {
		want := first[len(keys)-1-i].RunID
		if errs[i] != nil || res[i].Outcome == engine.TriggerCreated || res[i].Owner != want {
			t.Errorf("trigger %d again (key %s): %+v, %v; want the owner %s", i, again[i].Key, res[i], errs[i], want)
		}
	}
	if n := len(log.take()); n != len(masters) {
		t.Errorf("%d calls for the second batch, want %d", n, len(masters))
	}
}
