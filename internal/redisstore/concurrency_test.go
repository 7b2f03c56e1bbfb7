package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// On a namespace of several partitions every script call touches one slot
// (the cluster backend fails any CROSSSLOT): groups of one call spread
// over partitions, runs of one call too.
func TestConcurrencyScriptsOnManyPartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 8)
		ctx := context.Background()
		now := time.Now()
		var ps []engine.AcquireParams
		var rs []engine.ReleaseParams
		var ns []engine.RenewParams
		for i := range 40 {
			g := fmt.Sprintf("g%d", i%10)
			id := fmt.Sprintf("run-%d", i)
			ps = append(ps, engine.AcquireParams{Task: "t", Group: g, RunID: id, Token: id, MaxRuns: 2, Strategy: engine.ConcurrencyRoundRobin, Lease: time.Minute, Created: now})
			rs = append(rs, engine.ReleaseParams{Task: "t", Group: g, RunID: id, Token: id, MaxRuns: 2, Reserve: time.Minute})
			ns = append(ns, engine.RenewParams{Task: "t", Group: g, RunID: id, Token: id, Lease: time.Minute})
		}
		res, errs := s.AcquireSlots(ctx, now, ps)
		held := 0
		for i := range res {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			if res[i].Outcome == engine.AcquireHeld {
				held++
			}
		}
		if held != 20 {
			t.Fatalf("%d held, want 2 of each of 10 groups", held)
		}
		if _, errs := s.RenewSlots(ctx, now, ns); errs[0] != nil {
			t.Fatal(errs[0])
		}
		rres, errs := s.ReleaseSlots(ctx, now, rs)
		next := 0
		for i := range rres {
			if errs[i] != nil {
				t.Fatal(errs[i])
			}
			next += len(rres[i].Next)
		}
		if next != 20 {
			t.Fatalf("%d runs handed a slot, want the 20 waiting", next)
		}
		var ups []engine.UnparkParams
		for i := range 8 {
			ups = append(ups, engine.UnparkParams{RunID: engine.InPartition(fmt.Sprintf("run-x%d", i), i), Task: "t"})
		}
		if res, errs := s.Unpark(ctx, ups); errs[0] != nil || res[0] != engine.UnparkMissing {
			t.Fatalf("unpark of missing runs = %v, %v", res, errs)
		}
	})
}
