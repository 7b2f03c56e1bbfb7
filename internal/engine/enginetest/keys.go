package enginetest

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/taskq/taskq/internal/engine"
)

var keyCases = []suiteCase{
	{"GetKeysSaysWhoHoldsEach", getKeys},
	{"ScanKeysPagesThroughHeldKeys", scanKeys},
	{"ReleaseKeyIsCompareAndDelete", releaseKey},
	{"SuppressedTriggersAreRecorded", suppressedRecorded},
	{"SuppressedEventTaskIsRecordedWithItsEvent", suppressedEvent},
	{"SuppressedSourcesOfOneBatch", suppressedSources},
	{"SuppressedSearchAndPages", suppressedSearch},
	{"SuppressedRetentionAndTrim", suppressedRetention},
	{"SuppressedLimitsOff", suppressedOff},
}

func getKeys(h *h) {
	p := h.params("t", "held", engine.StrategyStatus)
	h.enqueue(p)
	if ks, held := h.key("free"); held || ks.Owner != "" {
		h.Fatalf("a free key = %+v, held %v", ks, held)
	}
	states, held, err := h.e.GetKeys(h.ctx, []string{"free", "held"})
	if err != nil || len(states) != 2 || len(held) != 2 || held[0] || !held[1] ||
		states[1].Key != "held" || states[1].Owner != p.RunID || states[1].TTL <= 0 || states[1].TTL > time.Minute {
		h.Fatalf("GetKeys = %+v, %v, %v", states, held, err)
	}
}

// scanAll lists every held key matching glob, page by page.
func scanAll(h *h, glob string, count int64) []string {
	h.Helper()
	var all []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10000 {
			h.Fatal("the key listing does not end")
		}
		keys, next, err := h.e.ScanKeys(h.ctx, glob, cursor, count)
		if err != nil {
			h.Fatalf("scan keys %q after %q: %v", glob, cursor, err)
		}
		all = append(all, keys...)
		if next == "" {
			break
		}
		cursor = next
	}
	slices.Sort(all)
	return slices.Compact(all) // a key may come twice
}

func scanKeys(h *h) {
	var want []string
	for i := range 12 {
		k := fmt.Sprint("order:", i)
		h.enqueue(h.params("t", k, engine.StrategyTTL))
		want = append(want, k)
	}
	h.enqueue(h.params("t", "other", engine.StrategyTTL))
	slices.Sort(want)
	if got := scanAll(h, "order:*", 5); !slices.Equal(got, want) {
		h.Fatalf("keys = %v, want %v", got, want)
	}
	if got := scanAll(h, "*", 1000); len(got) != 13 {
		h.Fatalf("every key = %v, want 13", got)
	}
	if _, _, err := h.e.ScanKeys(h.ctx, "*", "not a cursor", 10); !errors.Is(err, engine.ErrInvalidCursor) {
		h.Fatalf("a bad cursor: %v, want ErrInvalidCursor", err)
	}
}

func releaseKey(h *h) {
	p := h.params("t", "k", engine.StrategyTTL)
	h.enqueue(p)
	if ok, err := h.e.ReleaseKey(h.ctx, "k", "someone-else"); err != nil || ok {
		h.Fatalf("release by another = %v, %v", ok, err)
	}
	if _, held := h.key("k"); !held {
		h.Fatal("a release by another freed the key")
	}
	if ok, err := h.e.ReleaseKey(h.ctx, "k", p.RunID); err != nil || !ok {
		h.Fatalf("release by the owner = %v, %v", ok, err)
	}
	if _, held := h.key("k"); held {
		h.Fatal("the owner's release left the key held")
	}
	if ok, err := h.e.ReleaseKey(h.ctx, "k", p.RunID); err != nil || ok {
		h.Fatalf("release of a free key = %v, %v", ok, err)
	}
	if r := h.enqueue(h.params("t", "k", engine.StrategyTTL)); !r.Accepted {
		h.Fatalf("trigger of the released key = %+v", r)
	}
}

// suppressed lists every record q selects, page by page, checking the
// pages join without a gap or a repeat.
func suppressed(h *h, q engine.SuppressedQuery) []engine.Suppressed {
	h.Helper()
	if q.Now.IsZero() {
		q.Now = time.Now()
	}
	var all []engine.Suppressed
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 1000 {
			h.Fatal("the suppressed listing does not end")
		}
		got, next, err := h.e.ListSuppressed(h.ctx, q)
		if err != nil {
			h.Fatalf("list suppressed %+v: %v", q, err)
		}
		for _, e := range got {
			id := fmt.Sprintf("%s.%d.%d", e.ID, e.Partition, e.Index)
			if seen[id] {
				h.Fatalf("record %s listed twice", id)
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

func suppressedRecorded(h *h) {
	owner := h.params("charge", "order-1", engine.StrategyStatus)
	h.enqueue(owner)
	h.enqueue(h.params("charge", "", engine.StrategyNone))
	if got := suppressed(h, engine.SuppressedQuery{Limit: 10}); len(got) != 0 {
		h.Fatalf("triggers that created runs were recorded: %+v", got)
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
		{engine.PolicySignal, "cron:nightly", engine.SuppressedSignalled},
	}
	for i, c := range cases {
		p := h.params("refund", "order-1", engine.StrategyStatus)
		p.Input, p.Policy, p.Source, p.SignalID = []byte(fmt.Sprintf(`{"n":%d}`, i)), c.policy, c.source, "sig-1"
		if r := h.enqueue(p); r.Accepted || r.Owner != owner.RunID {
			h.Fatalf("duplicate %d = %+v", i, r)
		}
	}
	deb := h.params("digest", "user-1", engine.StrategyDebounce)
	h.enqueue(deb)
	if r := h.enqueue(h.params("digest", "user-1", engine.StrategyDebounce)); r.Outcome != engine.TriggerDebounced {
		h.Fatalf("debounced trigger = %+v", r)
	}
	if got := suppressed(h, engine.SuppressedQuery{Limit: 10}); len(got) != len(cases)+1 {
		h.Fatalf("%d records for %d suppressed triggers: %+v", len(got), len(cases)+1, got)
	}
	// Records of one key come newest first; those of keys in other
	// partitions may share a millisecond with them.
	if got := suppressed(h, engine.SuppressedQuery{Key: "user-1", Limit: 10}); len(got) != 1 ||
		got[0].Outcome != engine.SuppressedDebounced || got[0].Owner != deb.RunID {
		h.Fatalf("records of the debounced key = %+v", got)
	}
	got := suppressed(h, engine.SuppressedQuery{Key: "order-1", Limit: 10})
	if len(got) != len(cases) {
		h.Fatalf("%d records of order-1, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		e := got[len(cases)-1-i] // newest first
		src := c.source
		if src == "" {
			src = engine.SourceClient
		}
		digest := engine.InputDigest([]byte(fmt.Sprintf(`{"n":%d}`, i)))
		if e.Key != "order-1" || e.Owner != owner.RunID || e.Task != "refund" || e.Source != src ||
			e.Outcome != c.outcome || e.InputDigest != digest {
			h.Fatalf("record of duplicate %d = %+v, want source %s, outcome %s, digest %s", i, e, src, c.outcome, digest)
		}
		if e.Time.Before(before) || e.Time.After(time.Now().Add(time.Second)) {
			h.Fatalf("record of duplicate %d at %v, not now", i, e.Time)
		}
	}
}

func suppressedEvent(h *h) {
	owner := h.params("charge", "order-1", engine.StrategyStatus)
	h.enqueue(owner)
	ev := h.event("order.paid", h.eventRun("charge", "order-1", engine.StrategyStatus), h.eventRun("notify", "mail-1", engine.StrategyStatus))
	if runs := h.push(ev); runs[0].Outcome != engine.EventRunDeduplicated || runs[1].Outcome != engine.EventRunCreated {
		h.Fatalf("event runs %+v", runs)
	}
	got := suppressed(h, engine.SuppressedQuery{Limit: 10})
	if len(got) != 1 {
		h.Fatalf("records %+v, want one", got)
	}
	if e := got[0]; e.Key != "order-1" || e.Owner != owner.RunID || e.Task != "charge" || e.Source != engine.SourceEventPrefix+ev.ID ||
		e.Outcome != engine.SuppressedDeduplicated || e.InputDigest != engine.InputDigest(ev.Payload) {
		h.Fatalf("record %+v", e)
	}
}

// The triggers of one batch from several sources each record their own.
func suppressedSources(h *h) {
	owner := h.params("charge", "order-1", engine.StrategyStatus)
	h.enqueue(owner)
	var ps []*engine.EnqueueParams
	for _, src := range []string{engine.SourceHTTP, "", engine.SourceCLI, engine.SourceHTTP} {
		p := h.params("charge", "order-1", engine.StrategyStatus)
		p.Source = src
		ps = append(ps, p)
	}
	fresh := h.params("charge", "order-2", engine.StrategyStatus)
	fresh.Source = engine.SourceCLI
	ps = append(ps, fresh)
	rs, errs := h.e.EnqueueBatch(h.ctx, ps)
	if err := errors.Join(errs...); err != nil {
		h.Fatal(err)
	}
	for i := range 4 {
		if rs[i].Accepted || rs[i].Owner != owner.RunID {
			h.Fatalf("trigger %d = %+v", i, rs[i])
		}
	}
	if !rs[4].Accepted {
		h.Fatalf("the trigger of a free key = %+v", rs[4])
	}
	count := map[string]int{}
	for _, e := range suppressed(h, engine.SuppressedQuery{Limit: 10}) {
		count[e.Source]++
	}
	if fmt.Sprint(count) != fmt.Sprint(map[string]int{engine.SourceCLI: 1, engine.SourceClient: 1, engine.SourceHTTP: 2}) {
		h.Fatalf("records by source %v", count)
	}
}

func suppressedSearch(h *h) {
	a, c := h.params("charge", "order-a", engine.StrategyStatus), h.params("charge", "order-c", engine.StrategyStatus)
	h.enqueue(a)
	h.enqueue(c)
	for i := range 7 {
		key := "order-a"
		if i%3 == 2 {
			key = "order-c"
		}
		p := h.params("charge", key, engine.StrategyStatus)
		p.Input = []byte(fmt.Sprintf(`{"n":%d}`, i))
		h.enqueue(p)
	}
	all := suppressed(h, engine.SuppressedQuery{Limit: 100})
	paged := suppressed(h, engine.SuppressedQuery{Limit: 2})
	if len(all) != 7 || fmt.Sprint(all) != fmt.Sprint(paged) {
		h.Fatalf("listed %d at once, %d in pages of 2; want the same 7", len(all), len(paged))
	}
	for i := 1; i < len(all); i++ {
		if all[i].Time.After(all[i-1].Time) {
			h.Fatalf("record %d is newer than the one before it", i)
		}
	}
	byKey := suppressed(h, engine.SuppressedQuery{Key: "order-a", Limit: 2})
	byOwner := suppressed(h, engine.SuppressedQuery{Owner: c.RunID, Limit: 1})
	both := suppressed(h, engine.SuppressedQuery{Key: "order-c", Owner: c.RunID, Limit: 5})
	none := suppressed(h, engine.SuppressedQuery{Key: "order-a", Owner: c.RunID, Limit: 5})
	if len(byKey) != 5 || len(byOwner) != 2 || len(both) != 2 || len(none) != 0 {
		h.Fatalf("by key %d, by owner %d, both %d, neither %d; want 5, 2, 2, 0", len(byKey), len(byOwner), len(both), len(none))
	}
	for _, e := range byKey {
		if e.Key != "order-a" || e.Owner != a.RunID {
			h.Fatalf("search by key found %+v", e)
		}
	}
	if byKey[0].InputDigest != engine.InputDigest([]byte(`{"n":6}`)) {
		h.Fatalf("newest record of order-a = %+v", byKey[0])
	}
	if got := suppressed(h, engine.SuppressedQuery{Owner: "no-such-run.999999", Limit: 5}); len(got) != 0 {
		h.Fatalf("an owner naming no partition found %+v", got)
	}
	if _, _, err := h.e.ListSuppressed(h.ctx, engine.SuppressedQuery{Limit: 1, Cursor: "not a cursor", Now: time.Now()}); !errors.Is(err, engine.ErrInvalidCursor) {
		h.Fatalf("a bad cursor: %v, want ErrInvalidCursor", err)
	}
}

func suppressedRetention(h *h) {
	h.e.SetSuppressedLimits(engine.SuppressedLimits{Retention: time.Hour})
	if l := h.e.SuppressedLimits(); l.Retention != time.Hour {
		h.Fatalf("limits = %+v, want the retention set", l)
	}
	h.enqueue(h.params("charge", "order-1", engine.StrategyStatus))
	h.enqueue(h.params("charge", "order-1", engine.StrategyStatus))
	if got := suppressed(h, engine.SuppressedQuery{Limit: 5}); len(got) != 1 {
		h.Fatalf("fresh records %+v", got)
	}
	later := time.Now().Add(2 * time.Hour)
	if got := suppressed(h, engine.SuppressedQuery{Limit: 5, Now: later}); len(got) != 0 {
		h.Fatalf("records past their retention listed: %+v", got)
	}
	trim := func(cutoff time.Time) int64 {
		var n int64
		for part := range h.parts {
			m, err := h.e.TrimSuppressed(h.ctx, part, cutoff)
			if err != nil {
				h.Fatal(err)
			}
			n += m
		}
		return n
	}
	trim(time.Now().Add(-time.Hour))
	if got := suppressed(h, engine.SuppressedQuery{Limit: 5}); len(got) != 1 {
		h.Fatalf("a trim removed a record within its retention: %+v", got)
	}
	trim(later)
	if got := suppressed(h, engine.SuppressedQuery{Limit: 5}); len(got) != 0 {
		h.Fatalf("records left after trimming them: %+v", got)
	}
}

func suppressedOff(h *h) {
	h.e.SetSuppressedLimits(engine.SuppressedLimits{Cap: -1})
	if l := h.e.SuppressedLimits(); l.Cap != -1 {
		h.Fatalf("limits = %+v, want Cap -1", l)
	}
	h.enqueue(h.params("charge", "order-1", engine.StrategyStatus))
	if r := h.enqueue(h.params("charge", "order-1", engine.StrategyStatus)); r.Accepted {
		h.Fatal("duplicate accepted")
	}
	if got := suppressed(h, engine.SuppressedQuery{Limit: 5}); len(got) != 0 {
		h.Fatalf("records with recording off: %+v", got)
	}
}
