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

// Each way a trigger creates no run because its key is held is recorded
// once, with the trigger's key, task, source and input digest, the owner,
// and what it did; a trigger that creates a run records nothing.
func TestSuppressedRecordsEachDuplicate(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		owner := f.params("charge", "order-1", engine.StrategyStatus)
		if !f.enqueue(owner).Accepted {
			t.Fatal("owner not accepted")
		}
		if !f.enqueue(f.params("charge", "order-2", engine.StrategyStatus)).Accepted ||
			!f.enqueue(f.params("charge", "", engine.StrategyNone)).Accepted {
			t.Fatal("a trigger of a free key not accepted")
		}
		if n := f.suppressedLen(); n != 0 {
			t.Fatalf("triggers that created runs recorded %d suppressed triggers", n)
		}
		before := time.Now().Add(-time.Second)
		cases := []struct {
			policy  engine.Policy
			source  string
			outcome string
		}{
			{engine.PolicyReject, "", engine.SuppressedRejected},
			{engine.PolicyReject, engine.SourceHTTP, engine.SuppressedRejected},
			{engine.PolicyAttach, engine.SourceCLI, engine.SuppressedAttached},
			{engine.PolicySignal, engine.SourceClient, engine.SuppressedSignalled},
		}
		for i, c := range cases {
			p := f.params("refund", "order-1", engine.StrategyStatus)
			p.Input, p.Policy, p.Source, p.SignalID = []byte(fmt.Sprintf(`{"n":%d}`, i)), c.policy, c.source, "sig-1"
			if res := f.enqueue(p); res.Accepted || res.Owner != owner.RunID {
				t.Fatalf("duplicate %d: %+v", i, res)
			}
		}
		got := f.suppressed(engine.SuppressedQuery{Limit: 10})
		if len(got) != len(cases) {
			t.Fatalf("%d records for %d duplicates: %+v", len(got), len(cases), got)
		}
		for i, c := range cases {
			e := got[len(cases)-1-i] // newest first
			want := c.source
			if want == "" {
				want = engine.SourceClient
			}
			digest := engine.InputDigest([]byte(fmt.Sprintf(`{"n":%d}`, i)))
			if e.Key != "order-1" || e.Owner != owner.RunID || e.Task != "refund" || e.Source != want ||
				e.Outcome != c.outcome || e.InputDigest != digest || len(digest) != 16 {
				t.Errorf("record of duplicate %d = %+v, want source %s, outcome %s, digest %s", i, e, want, c.outcome, digest)
			}
			if e.Time.Before(before) || e.Time.After(time.Now().Add(time.Second)) {
				t.Errorf("record of duplicate %d at %v, not now", i, e.Time)
			}
		}
	})
}

// A debounced trigger handed to its waiting owner is recorded as such.
func TestSuppressedRecordsDebounce(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		owner := f.params("digest", "user-1", engine.StrategyDebounce)
		f.enqueue(owner)
		if res := f.enqueue(f.params("digest", "user-1", engine.StrategyDebounce)); res.Outcome != engine.TriggerDebounced {
			t.Fatalf("second trigger: %+v", res)
		}
		got := f.suppressed(engine.SuppressedQuery{Limit: 10})
		if len(got) != 1 || got[0].Outcome != engine.SuppressedDebounced || got[0].Owner != owner.RunID {
			t.Fatalf("records %+v, want one debounced to %s", got, owner.RunID)
		}
	})
}

// An event's task whose key is held is swallowed (the event records the
// owner) and recorded with the event as its source, at once and in steps;
// a task of the event that created its run records nothing.
func TestSuppressedRecordsEventCollision(t *testing.T) {
	eachFanout(t, func(t *testing.T, b *redistest.Backend, f *fixture) {
		owner := f.params("charge", "order-1", engine.StrategyStatus)
		f.enqueue(owner)
		ev := f.event("evt-1", "order.paid", f.eventRun("charge", "order-1", engine.StrategyStatus),
			f.eventRun("notify", "mail-1", engine.StrategyStatus))
		runs := f.push(ev)
		if runs[0].Outcome != engine.EventRunDeduplicated || runs[1].Outcome != engine.EventRunCreated {
			t.Fatalf("event runs %+v", runs)
		}
		got := f.suppressed(engine.SuppressedQuery{Limit: 10})
		if len(got) != 1 {
			t.Fatalf("records %+v, want one", got)
		}
		e := got[0]
		if e.Key != "order-1" || e.Owner != owner.RunID || e.Task != "charge" || e.Source != "event:evt-1" ||
			e.Outcome != engine.SuppressedDeduplicated || e.InputDigest != engine.InputDigest(ev.Payload) {
			t.Errorf("record %+v", e)
		}
	})
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

// A cap below zero records nothing.
func TestSuppressedCapOff(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.s.SetSuppressedLimits(engine.SuppressedLimits{Cap: -1})
		f.enqueue(f.params("charge", "order-1", engine.StrategyStatus))
		if res := f.enqueue(f.params("charge", "order-1", engine.StrategyStatus)); res.Accepted {
			t.Fatal("duplicate accepted")
		}
		if n := f.suppressedLen(); n != 0 {
			t.Fatalf("%d records with recording off", n)
		}
	})
}

// A search by key or by owner finds that key's or owner's records only,
// newest first, page by page.
func TestSuppressedSearchByKeyAndOwner(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		a := f.params("charge", "order-a", engine.StrategyStatus)
		c := f.params("charge", "order-c", engine.StrategyStatus)
		f.enqueue(a)
		f.enqueue(c)
		for i := range 7 {
			key := "order-a"
			if i%3 == 2 {
				key = "order-c"
			}
			p := f.params("charge", key, engine.StrategyStatus)
			p.Input = []byte(fmt.Sprintf(`{"n":%d}`, i))
			f.enqueue(p)
		}
		byKey := f.suppressed(engine.SuppressedQuery{Key: "order-a", Limit: 2})
		byOwner := f.suppressed(engine.SuppressedQuery{Owner: c.RunID, Limit: 1})
		both := f.suppressed(engine.SuppressedQuery{Key: "order-c", Owner: c.RunID, Limit: 5})
		none := f.suppressed(engine.SuppressedQuery{Key: "order-a", Owner: c.RunID, Limit: 5})
		if len(byKey) != 5 || len(byOwner) != 2 || len(both) != 2 || len(none) != 0 {
			t.Fatalf("by key %d, by owner %d, both %d, neither %d records; want 5, 2, 2, 0", len(byKey), len(byOwner), len(both), len(none))
		}
		for _, e := range byKey {
			if e.Key != "order-a" || e.Owner != a.RunID {
				t.Errorf("search by key found %+v", e)
			}
		}
		for _, e := range byOwner {
			if e.Key != "order-c" || e.Owner != c.RunID {
				t.Errorf("search by owner found %+v", e)
			}
		}
		if byKey[0].InputDigest != engine.InputDigest([]byte(`{"n":6}`)) {
			t.Errorf("newest record of order-a %+v, want the input {\"n\":6}", byKey[0])
		}
		if got := f.suppressed(engine.SuppressedQuery{Owner: "no-such-run.99", Limit: 5}); len(got) != 0 {
			t.Errorf("an owner naming no partition found %+v", got)
		}
	})
}

// Records older than the retention are left out of listings and trimmed.
func TestSuppressedRetention(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		f.s.SetSuppressedLimits(engine.SuppressedLimits{Retention: time.Hour})
		f.enqueue(f.params("charge", "order-1", engine.StrategyStatus))
		f.enqueue(f.params("charge", "order-1", engine.StrategyStatus))
		if got := f.suppressed(engine.SuppressedQuery{Limit: 5}); len(got) != 1 {
			t.Fatalf("fresh records %+v", got)
		}
		later := time.Now().Add(2 * time.Hour)
		if got := f.suppressed(engine.SuppressedQuery{Limit: 5, Now: later}); len(got) != 0 {
			t.Fatalf("records past their retention listed: %+v", got)
		}
		if _, err := f.s.TrimSuppressed(f.ctx, 0, time.Now().Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if n := f.suppressedLen(); n != 1 {
			t.Fatalf("trim removed a record within its retention: %d left", n)
		}
		if _, err := f.s.TrimSuppressed(f.ctx, 0, later.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if n := f.suppressedLen(); n != 0 {
			t.Fatalf("%d records left after trimming them", n)
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

// The triggers of one batch from several sources are sent in a call per
// source, each recording its own, and answered in the batch's order.
func TestSuppressedMixedSourcesInOneBatch(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		owner := f.params("charge", "order-1", engine.StrategyStatus)
		f.enqueue(owner)
		sources := []string{engine.SourceHTTP, "", engine.SourceCLI, engine.SourceHTTP}
		ps := make([]*engine.EnqueueParams, len(sources))
		for i, src := range sources {
			ps[i] = f.params("charge", "order-1", engine.StrategyStatus)
			ps[i].Source = src
		}
		fresh := f.params("charge", "order-2", engine.StrategyStatus)
		fresh.Source = engine.SourceCLI
		ps = append(ps, fresh)
		res, errs := f.s.EnqueueBatch(f.ctx, ps)
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		for i := range sources {
			if res[i].Accepted || res[i].Owner != owner.RunID {
				t.Fatalf("trigger %d: %+v", i, res[i])
			}
		}
		if !res[len(sources)].Accepted {
			t.Fatalf("the trigger of a free key: %+v", res[len(sources)])
		}
		count := map[string]int{}
		for _, e := range f.suppressed(engine.SuppressedQuery{Limit: 10}) {
			count[e.Source]++
		}
		if count[engine.SourceHTTP] != 2 || count[engine.SourceClient] != 1 || count[engine.SourceCLI] != 1 || len(count) != 3 {
			t.Fatalf("records by source %v", count)
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
