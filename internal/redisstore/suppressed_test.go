package redisstore_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// suppressed lists every suppressed trigger of the fixture's namespace
// that the query selects, page by page, checking that pages join without
// a gap or a repeat.
func (f *fixture) suppressed(q engine.SuppressedQuery) []engine.Suppressed {
	f.t.Helper()
	return listSuppressed(f.t, f.s, q)
}

func listSuppressed(t *testing.T, s *redisstore.Store, q engine.SuppressedQuery) []engine.Suppressed {
	t.Helper()
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	var all []engine.Suppressed
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatal("the listing does not end")
		}
		got, next, err := s.ListSuppressed(t.Context(), q)
		if err != nil {
			t.Fatalf("list suppressed %+v: %v", q, err)
		}
		for _, e := range got {
			id := fmt.Sprintf("%s.%d.%d", e.ID, e.Partition, e.Index)
			if seen[id] {
				t.Fatalf("record %s listed twice", id)
			}
			seen[id] = true
		}
		all = append(all, got...)
		if next == "" {
			return all
		}
		q.Cursor = next
	}
}

func (f *fixture) suppressedLen() int64 {
	f.t.Helper()
	n, err := f.b.Client.XLen(f.ctx, f.k.Prefix()+"suppressed").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return n
}

// A replay of a fan-out's trigger step, which answers from its marker,
// records nothing a second time.
func TestSuppressedEventReplayRecordsOnce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.enqueue(f.params("charge", "order-1", engine.StrategyStatus))
		ev := f.event("evt-1", "order.paid", f.eventRun("charge", "order-1", engine.StrategyStatus))
		if err := f.s.StoreEventStep(f.ctx, ev); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			runs, err := f.s.TriggerEventStep(f.ctx, ev)
			if err != nil || runs[0].Outcome != engine.EventRunDeduplicated {
				t.Fatalf("trigger step: %+v, %v", runs, err)
			}
		}
		if n := f.suppressedLen(); n != 1 {
			t.Fatalf("%d records after a replay, want 1", n)
		}
	})
}

// The stream is capped: past the cap its oldest entries go (XADD MAXLEN ~
// trims whole nodes, so it may hold up to a node, 100 entries by
// default, more), and the newest are kept. A trigger sent alone is an
// entry; the duplicates of one call share one.
func TestSuppressedCapBoundsTheStream(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		const limit, dups = 50, 400
		f.s.SetSuppressedLimits(engine.SuppressedLimits{Cap: limit})
		f.enqueue(f.params("charge", "order-1", engine.StrategyStatus))
		for i := range dups {
			p := f.params("charge", "order-1", engine.StrategyStatus)
			p.Input = []byte(fmt.Sprintf(`{"n":%d}`, i))
			f.enqueue(p)
		}
		n := f.suppressedLen()
		if n < limit || n > limit+100 {
			t.Fatalf("stream holds %d entries after %d duplicates, want %d to %d", n, dups, limit, limit+100)
		}
		got := f.suppressed(engine.SuppressedQuery{Limit: 7})
		if int64(len(got)) != n || got[0].InputDigest != engine.InputDigest([]byte(fmt.Sprintf(`{"n":%d}`, dups-1))) {
			t.Fatalf("listed %d of %d, newest %+v", len(got), n, got[0])
		}
		ps := make([]*engine.EnqueueParams, 20)
		for j := range ps {
			ps[j] = f.params("charge", "order-1", engine.StrategyStatus)
			ps[j].Input = []byte(fmt.Sprintf(`{"batch":%d}`, j))
		}
		if _, errs := f.s.EnqueueBatch(f.ctx, ps); errors.Join(errs...) != nil {
			t.Fatal(errors.Join(errs...))
		}
		if m := f.suppressedLen(); m > n+1 {
			t.Fatalf("a call of 20 duplicates added %d entries", m-n)
		}
		got = f.suppressed(engine.SuppressedQuery{Limit: 3})
		for j := range 20 {
			want := engine.InputDigest([]byte(fmt.Sprintf(`{"batch":%d}`, 19-j)))
			if got[j].InputDigest != want || got[j].ID != got[0].ID {
				t.Fatalf("record %d of the call's entry: %+v, want digest %s", j, got[j], want)
			}
		}
	})
}

// With four partitions each key's records are in its partition, and a
// listing merges them newest first, the same in pages as at once.
func TestSuppressedListingMergesPartitions(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		s := redisstore.NewPartitioned(b.Client, b.Namespace, 4)
		parts, err := s.Partitions(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		trigger := func(run, key string) engine.EnqueueResult {
			res, err := s.Enqueue(t.Context(), &engine.EnqueueParams{RunID: run, Task: "charge", Input: []byte(`{}`),
				Key: key, Strategy: engine.StrategyStatus, Hold: time.Minute, Retention: time.Hour, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
		const keys = 12
		inPart := map[int]bool{}
		for i := range keys {
			key := fmt.Sprintf("order-%d", i)
			inPart[parts.OfKey(key)] = true
			trigger(fmt.Sprintf("owner-%d", i), key)
		}
		if len(inPart) < 2 {
			t.Fatalf("the keys fell in %d partition", len(inPart))
		}
		var want []string
		for round := range 3 {
			for i := range keys {
				key := fmt.Sprintf("order-%d", i)
				res := trigger(fmt.Sprintf("dup-%d-%d", round, i), key)
				if res.Accepted {
					t.Fatalf("duplicate of %s accepted", key)
				}
				want = append(want, key)
			}
		}
		slices.Reverse(want)
		one := listSuppressed(t, s, engine.SuppressedQuery{Limit: 100})
		paged := listSuppressed(t, s, engine.SuppressedQuery{Limit: 5})
		if len(one) != len(want) || len(paged) != len(want) {
			t.Fatalf("listed %d at once and %d in pages, want %d", len(one), len(paged), len(want))
		}
		for i := range one {
			if one[i] != paged[i] {
				t.Fatalf("record %d: %+v at once, %+v in pages", i, one[i], paged[i])
			}
			if i > 0 && one[i].Time.After(one[i-1].Time) {
				t.Fatalf("record %d is newer than the one before it", i)
			}
			if one[i].Partition != parts.OfKey(one[i].Key) {
				t.Errorf("record of %s in partition %d, its key's is %d", one[i].Key, one[i].Partition, parts.OfKey(one[i].Key))
			}
		}
		got := map[string]int{}
		for _, e := range one {
			got[e.Key]++
		}
		for i := range keys {
			if n := got[fmt.Sprintf("order-%d", i)]; n != 3 {
				t.Errorf("order-%d has %d records, want 3", i, n)
			}
		}
		byKey := listSuppressed(t, s, engine.SuppressedQuery{Key: "order-5", Limit: 2})
		if len(byKey) != 3 {
			t.Errorf("search of order-5 found %+v", byKey)
		}
		for _, e := range byKey {
			if e.Key != "order-5" || e.Owner != byKey[0].Owner {
				t.Errorf("search of order-5 found %+v", e)
			}
		}
		if _, _, err := s.ListSuppressed(t.Context(), engine.SuppressedQuery{Limit: 1, Cursor: "1-0.9"}); !errors.Is(err, engine.ErrInvalidCursor) {
			t.Errorf("a cursor naming partition 9 of 4: %v", err)
		}
	})
}

func TestCheckSource(t *testing.T) {
	for _, ok := range []string{"", "client", "cron:nightly", "svc.billing-2"} {
		if err := engine.CheckSource(ok); err != nil {
			t.Errorf("CheckSource(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"two words", "tab\there", "é", string(make([]byte, engine.MaxSourceBytes+1))} {
		if err := engine.CheckSource(bad); !errors.Is(err, engine.ErrInvalidSource) {
			t.Errorf("CheckSource(%q) = %v, want ErrInvalidSource", bad, err)
		}
	}
}

// A record Redis refuses costs the trigger nothing: with the stream's key
// holding a string, a duplicate is still answered with its owner (at
// maxmemory, see TestEnqueueAtMaxmemoryRefusesNewRunsAndAnswersDuplicates).
func TestSuppressedRecordRefusedAnswersTheDuplicate(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		owner := f.params("charge", "order-1", engine.StrategyStatus)
		f.enqueue(owner)
		if err := b.Client.Set(f.ctx, f.k.Prefix()+"suppressed", "not a stream", 0).Err(); err != nil {
			t.Fatal(err)
		}
		res, err := f.s.Enqueue(f.ctx, f.params("charge", "order-1", engine.StrategyStatus))
		if err != nil || res.Accepted || res.Owner != owner.RunID {
			t.Fatalf("duplicate beside a wrong-typed stream: %+v, %v", res, err)
		}
		if _, _, err := f.s.ListSuppressed(f.ctx, engine.SuppressedQuery{Limit: 1, Now: time.Now()}); err == nil {
			t.Error("listing a wrong-typed stream succeeded")
		}
	})
}
