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

// QueueWaits tells, per task and summed over the partitions, the runs held
// out of their streams apart: scheduled, held back by a rate limit, parked
// by a concurrency group, and waiting for a retry.
func TestQueueWaitsCountsEachReason(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 4)
		now := time.Now()
		mk := func(id, task string, delay time.Duration) *engine.EnqueueParams {
			return &engine.EnqueueParams{RunID: id, Task: task, Input: []byte(`{}`), Meta: []byte(`{}`),
				Key: "k-" + id, Strategy: engine.StrategyStatus, Hold: time.Hour, Retries: 3, MaxDeliveries: 9,
				Retention: time.Hour, Now: now, Delay: delay}
		}
		var ps []*engine.EnqueueParams
		for i := range 3 {
			ps = append(ps, mk(fmt.Sprint("later-", i), "a", time.Hour)) // scheduled
		}
		for i := range 8 {
			ps = append(ps, mk(fmt.Sprint("now-", i), "a", 0))
		}
		ps = append(ps, mk("b-later", "b", time.Hour))
		if _, errs := s.EnqueueBatch(ctx, ps); errs[0] != nil {
			t.Fatal(errs[0])
		}
		if err := s.EnsureGroup(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		parts, err := s.Partitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ds []engine.Delivery
		for part := range parts.Count() {
			got, err := s.ReadGroup(ctx, part, "w1", []string{"a"}, 100, -1)
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, got...)
		}
		if len(ds) != 8 {
			t.Fatalf("read %d deliveries, want 8", len(ds))
		}
		// Two retried, two deferred by a rate limit, two parked; two stay
		// queued (delivered).
		for _, d := range ds[:2] {
			st, err := s.Start(ctx, &engine.StartParams{RunID: d.RunID, Task: d.Task, EntryID: d.EntryID, Consumer: "w1", Now: now})
			if err != nil || !st.Started {
				t.Fatalf("start = %+v, %v", st, err)
			}
			if fr, err := s.Finish(ctx, &engine.FinishParams{RunID: d.RunID, Attempt: st.Attempt, Outcome: engine.OutcomeRetry,
				Payload: []byte("again"), Now: now, RetryAt: now.Add(time.Hour), Task: d.Task, EntryID: d.EntryID, Spec: st.Spec}); err != nil || !fr.Written {
				t.Fatalf("retry = %+v, %v", fr, err)
			}
		}
		if _, errs := s.DeferRuns(ctx, []engine.Deferral{{Delivery: ds[2], Due: now.Add(time.Hour), Reason: `rate limit "r"`},
			{Delivery: ds[3], Due: now.Add(time.Hour), Reason: `rate limit "r"`}}); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		if _, errs := s.Park(ctx, now.Add(time.Hour), []engine.ParkParams{
			{RunID: ds[4].RunID, Task: "a", EntryID: ds[4].EntryID, Reason: "group g", Group: "g"},
			{RunID: ds[5].RunID, Task: "a", EntryID: ds[5].EntryID, Reason: "group g", Group: "g"}}); errs[0] != nil || errs[1] != nil {
			t.Fatal(errs)
		}
		got, truncated, err := s.QueueWaits(ctx)
		if err != nil || truncated {
			t.Fatalf("QueueWaits: %v, truncated %v", err, truncated)
		}
		want := map[string]engine.QueueWait{
			"a": {Scheduled: 3, RateLimited: 2, Concurrency: 2, Retrying: 2},
			"b": {Scheduled: 1},
		}
		if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
			t.Fatalf("QueueWaits = %+v, want %+v", got, want)
		}
	})
}
