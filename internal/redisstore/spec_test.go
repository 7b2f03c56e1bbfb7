package redisstore_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// A delivery carries what was enqueued, and a retried run's new delivery
// what its record holds then: its failures and the attempts it began.
func TestDeliveryCarriesTheRunSpec(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		p := f.params("t", "k1", engine.StrategyStatus)
		p.Input, p.Meta = []byte(`{"id":"a b"}`), []byte(`{"tenant":"x"}`)
		p.Retain, p.Timeout, p.Retries, p.MaxDeliveries = 2*time.Second, 3*time.Second, 4, 5
		f.enqueue(p)
		ds := f.read("t", "w1")
		want := engine.RunSpec{
			Input: p.Input, Meta: p.Meta, Key: "k1", Strategy: engine.StrategyStatus, Hold: p.Hold, Retries: 4,
			Timeout: 3 * time.Second, Created: time.UnixMilli(p.Now.UnixMilli()), MaxDeliveries: 5,
			Retain: 2 * time.Second, Retention: time.Hour,
		}
		if len(ds) != 1 || ds[0].Spec == nil || fmt.Sprint(*ds[0].Spec) != fmt.Sprint(want) {
			t.Fatalf("delivery = %+v, want spec %+v", ds, want)
		}
		// Started without its spec, the run's start reads the same from the record.
		st := f.start(engine.Delivery{Task: "t", EntryID: ds[0].EntryID, RunID: p.RunID}, "w1")
		if st.Spec == nil || fmt.Sprint(*st.Spec) != fmt.Sprint(want) {
			t.Fatalf("start without a spec read %+v, want %+v", st.Spec, want)
		}
		f.finish(p.RunID, st.Attempt, engine.OutcomeRetry, "again")
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("promote = %d, %v", n, err)
		}
		ds = f.read("t", "w1")
		want.Fails, want.Attempts = 1, 1
		if len(ds) != 1 || ds[0].Spec == nil || fmt.Sprint(*ds[0].Spec) != fmt.Sprint(want) {
			t.Fatalf("retried delivery = %+v, want spec %+v", ds, want)
		}
		if st, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds); errs[0] != nil || st[0].Spec.Fails != 1 || st[0].Attempt != 2 {
			t.Errorf("start of the retried run = %+v, %v; want its second attempt after one failure", st[0], errs[0])
		}
	})
}

// Started and finished with the spec their deliveries carry, runs end in
// exactly the state they end in when the scripts read it from the records:
// the same records, keys, key and record lifetimes, streams and pending
// lists, for every strategy and outcome, a stale finish, and a run
// failed for too many deliveries.
func TestSpecPathWritesWhatTheRecordPathWrites(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		ctx := context.Background()
		type state struct {
			held
			starts   []string
			finishes []string
		}
		run := func(ns string, withSpec bool) state {
			// One partition, the cluster's too: the streams and keys
			// compared are the home partition's.
			s := redisstore.NewPartitioned(b.Client, ns, 1)
			t.Cleanup(func() { redistest.DeleteNamespace(context.Background(), b.Client, ns) })
			k := s.Keys()
			now := time.UnixMilli(1_700_000_000_000)
			mk := func(id, key string, strat engine.Strategy, retain time.Duration, maxdel int) *engine.EnqueueParams {
				return &engine.EnqueueParams{RunID: id, Task: "t", Input: []byte(`{"id":"` + id + `"}`), Meta: []byte(`{}`),
					Key: key, Strategy: strat, Hold: time.Hour, Retain: retain, Retries: 1, MaxDeliveries: maxdel,
					Retention: time.Hour, Now: now}
			}
			ps := []*engine.EnqueueParams{
				mk("ok", "k-ok", engine.StrategyStatus, 0, 0),
				mk("retained", "k-ret", engine.StrategyStatus, time.Minute, 0),
				mk("failed", "k-fail", engine.StrategyTTL, 0, 0),
				mk("retry", "k-retry", engine.StrategyStatus, 0, 0),
				mk("plain", "", engine.StrategyNone, 0, 0),
				mk("stale", "k-stale", engine.StrategyStatus, 0, 0),
				mk("once", "k-once", engine.StrategyStatus, 0, 1),
			}
			if _, errs := s.EnqueueBatch(ctx, ps); errs[0] != nil {
				t.Fatal(errs[0])
			}
			if err := s.EnsureGroup(ctx, "t"); err != nil {
				t.Fatal(err)
			}
			ds, err := s.ReadGroup(ctx, 0, "w1", []string{"t"}, 100, -1)
			if err != nil || len(ds) != len(ps) {
				t.Fatalf("read %d deliveries, %v", len(ds), err)
			}
			if !withSpec {
				for i := range ds {
					ds[i].Spec = nil
				}
			}
			var st state
			sts, errs := s.StartBatch(ctx, "w1", now, ds)
			for i, r := range sts {
				st.starts = append(st.starts, fmt.Sprint(r.Started, r.Attempt, specOf(r), errs[i]))
			}
			// "once" is delivered again (its worker died) and has used up its deliveries.
			again, err := s.AutoClaim(ctx, 0, "t", "w2", 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range again {
				if d.RunID != "once" {
					continue
				}
				if !withSpec {
					d.Spec = nil
				}
				r, errs := s.StartBatch(ctx, "w2", now, []engine.Delivery{d})
				st.starts = append(st.starts, fmt.Sprint(r[0].Started, r[0].Reason, specOf(r[0]), errs[0]))
			}
			outcome := map[string]engine.Outcome{
				"ok": engine.OutcomeSucceeded, "retained": engine.OutcomeSucceeded, "failed": engine.OutcomeFailed,
				"retry": engine.OutcomeRetry, "plain": engine.OutcomeSucceeded, "stale": engine.OutcomeSucceeded,
			}
			var fps []*engine.FinishParams
			for i, d := range ds {
				o, ok := outcome[d.RunID]
				if !ok {
					continue
				}
				fp := &engine.FinishParams{RunID: d.RunID, Attempt: sts[i].Attempt, Outcome: o, Payload: []byte(`{}`),
					Now: now, RetryAt: now.Add(time.Minute)}
				if d.RunID == "stale" {
					fp.Attempt++
				}
				if withSpec {
					fp.Task, fp.EntryID, fp.Spec = d.Task, d.EntryID, sts[i].Spec
				}
				fps = append(fps, fp)
			}
			frs, ferrs := s.FinishBatch(ctx, fps)
			for i := range frs {
				st.finishes = append(st.finishes, fmt.Sprint(frs[i], ferrs[i]))
			}
			st.held = heldBy(ctx, b, k, "t", ps)
			return st
		}
		slow, fast := run(b.Namespace+"-record", false), run(b.Namespace+"-spec", true)
		if fmt.Sprint(slow.starts) != fmt.Sprint(fast.starts) || fmt.Sprint(slow.finishes) != fmt.Sprint(fast.finishes) {
			t.Errorf("replies differ:\nrecord path %v %v\nspec path   %v %v", slow.starts, slow.finishes, fast.starts, fast.finishes)
		}
		for id, rec := range slow.records {
			if !maps.Equal(rec, fast.records[id]) {
				t.Errorf("record %s differs:\nrecord path %v\nspec path   %v", id, rec, fast.records[id])
			}
		}
		if fmt.Sprint(slow.keys, slow.ttls, slow.stream, slow.pending, slow.retry) != fmt.Sprint(fast.keys, fast.ttls, fast.stream, fast.pending, fast.retry) {
			t.Errorf("state differs:\nrecord path %v %v %v %d %v\nspec path   %v %v %v %d %v",
				slow.keys, slow.ttls, slow.stream, slow.pending, slow.retry, fast.keys, fast.ttls, fast.stream, fast.pending, fast.retry)
		}
		// The scenario reaches what it claims to compare.
		want := map[string]string{"ok": "succeeded", "retained": "succeeded", "failed": "failed", "retry": "queued",
			"plain": "succeeded", "stale": "running", "once": "failed"}
		for id, status := range want {
			if got := fast.records[id]["status"]; got != status {
				t.Errorf("run %s is %q, want %q", id, got, status)
			}
		}
		if fast.keys["k-ok"]["owner"] != "" || fast.keys["k-ret"]["owner"] != "retained" || !fast.ttls["key k-ret"] {
			t.Errorf("keys = %v %v: want k-ok released and k-ret retained", fast.keys, fast.ttls)
		}
	})
}

// An entry without a valid spec (written by an older taskq, say) is
// delivered without one, and its start reads the run from the record.
func TestEntryWithoutAValidSpecIsStartedFromTheRecord(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		for _, o := range []string{"", "status 1 2", "status 0 0 0 0 0 0 x", "status 0 0 0 0 0 0",
			"status 0 0 0 0 0 0 0 0", "status 0 0 0 0 0 0 0 0 0 0 9"} {
			p := f.params("t", "k"+o, engine.StrategyStatus)
			p.Input = []byte(`{"from":"record"}`)
			f.enqueue(p)
			if err := f.s.EnsureGroup(f.ctx, "t"); err != nil {
				t.Fatal(err)
			}
			// Consume the entry enqueue wrote, and queue the run again with
			// an entry that has o as its spec.
			if _, err := f.s.ReadGroup(f.ctx, 0, "w0", []string{"t"}, 10, -1); err != nil {
				t.Fatal(err)
			}
			id := b.Client.XAdd(f.ctx, &redis.XAddArgs{Stream: f.k.Stream("t"), Values: []any{"r", p.RunID, "i", `{"from":"entry"}`, "o", o}}).Val()
			b.Client.HSet(f.ctx, f.k.Run(p.RunID), "entry", id)
			ds := f.read("t", "w1")
			if len(ds) != 1 || ds[0].Spec != nil {
				t.Fatalf("spec %q: delivery %+v, want one without a spec", o, ds)
			}
			st, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds)
			if errs[0] != nil || !st[0].Started || st[0].Spec == nil || string(st[0].Spec.Input) != `{"from":"record"}` || st[0].Spec.Key != p.Key {
				t.Fatalf("spec %q: start = %+v, %v; want the record's input and key", o, st[0], errs[0])
			}
		}
	})
}

// held is what Redis holds of some runs of one task, for comparing the
// outcomes of two ways of getting there.
type held struct {
	records, keys map[string]map[string]string // records without their entry IDs
	ttls          map[string]bool              // whether each record and key expires
	stream        []string                     // run IDs of the task stream's entries
	pending       int64
	retry         []string
}

// heldBy reads what Redis holds of runs ps of task.
func heldBy(ctx context.Context, b *redistest.Backend, k redisstore.Keys, task string, ps []*engine.EnqueueParams) held {
	h := held{records: map[string]map[string]string{}, keys: map[string]map[string]string{}, ttls: map[string]bool{}}
	for _, p := range ps {
		rec := b.Client.HGetAll(ctx, k.Run(p.RunID)).Val()
		delete(rec, "entry") // a stream entry ID: when it was added
		h.records[p.RunID] = rec
		h.ttls["record "+p.RunID] = b.Client.PTTL(ctx, k.Run(p.RunID)).Val() > 0
		if p.Key != "" {
			h.keys[p.Key] = map[string]string{"owner": b.Client.Get(ctx, k.IdempotencyKey(p.Key)).Val()}
			h.ttls["key "+p.Key] = b.Client.PTTL(ctx, k.IdempotencyKey(p.Key)).Val() > 0
		}
	}
	for _, m := range b.Client.XRange(ctx, k.Stream(task), "-", "+").Val() {
		h.stream = append(h.stream, fmt.Sprint(m.Values["r"]))
	}
	h.pending = b.Client.XPending(ctx, k.Stream(task), redisstore.GroupName).Val().Count
	h.retry = b.Client.ZRange(ctx, k.Retry(), 0, -1).Val()
	return h
}

// specOf is r's spec as a value, for comparing results.
func specOf(r engine.StartResult) any {
	if r.Spec == nil {
		return nil
	}
	return *r.Spec
}

// legacyRun turns a run's record and delivery into what taskq wrote before
// a record held its settings in one spec field: one field per setting and
// a created field, and an entry whose spec has the nine values of then
// (which no longer parse, so its delivery carries no spec).
func legacyRun(f *fixture, p *engine.EnqueueParams) {
	f.t.Helper()
	c, ctx, run := f.b.Client, f.ctx, f.k.Run(p.RunID)
	c.HDel(ctx, run, "spec")
	c.HSet(ctx, run, "strat", string(p.Strategy), "hold", p.Hold.Milliseconds(), "retain", p.Retain.Milliseconds(),
		"retries", p.Retries, "maxdel", p.MaxDeliveries, "timeout", p.Timeout.Milliseconds(),
		"keep", p.Retention.Milliseconds(), "created", p.Now.UnixMilli())
	// Consume the entry enqueue wrote; queue the run with an entry of then.
	if _, err := f.s.ReadGroup(ctx, 0, "w0", []string{p.Task}, 10, -1); err != nil {
		f.t.Fatal(err)
	}
	old := fmt.Sprintf("%s %d %d %d %d %d %d 0 0", p.Strategy, p.Retries, p.Timeout.Milliseconds(), p.Now.UnixMilli(),
		p.MaxDeliveries, p.Retain.Milliseconds(), p.Retention.Milliseconds())
	id := c.XAdd(ctx, &redis.XAddArgs{Stream: f.k.Stream(p.Task), Values: []any{"r", p.RunID, "i", string(p.Input),
		"m", string(p.Meta), "k", p.Key, "o", old}}).Val()
	c.HSet(ctx, run, "entry", id)
}

// A run queued by a taskq that kept each setting in a field of its own is
// shown, started, retried and ended with those settings: its key held
// through the retry and released at its end, its record kept for its
// retention; and a cancelled one releases its key too.
func TestRunsRecordedBeforeTheSpecFieldKeepTheirSettings(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		if err := f.s.EnsureGroup(f.ctx, "t"); err != nil {
			t.Fatal(err)
		}
		p := f.params("t", "old-1", engine.StrategyStatus)
		p.Timeout, p.Retries, p.MaxDeliveries = 3*time.Second, 2, 5
		f.enqueue(p)
		legacyRun(f, p)
		run, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil || run.Strategy != engine.StrategyStatus || run.Hold != p.Hold || run.Retries != 2 ||
			run.Timeout != 3*time.Second || !run.Created.Equal(time.UnixMilli(p.Now.UnixMilli())) {
			t.Fatalf("old record read as %+v, %v; want its settings", run, err)
		}
		ds := f.read("t", "w1")
		if len(ds) != 1 || ds[0].Spec != nil {
			t.Fatalf("old delivery = %+v, want one without a spec", ds)
		}
		st := f.start(ds[0], "w1")
		if !st.Started || st.Spec == nil || st.Spec.Strategy != engine.StrategyStatus || st.Spec.MaxDeliveries != 5 ||
			st.Spec.Retention != time.Hour {
			t.Fatalf("start = %+v (spec %+v); want the old record's settings", st, st.Spec)
		}
		f.finish(p.RunID, st.Attempt, engine.OutcomeRetry, "again")
		if owner := b.Client.Get(f.ctx, f.k.IdempotencyKey(p.Key)).Val(); owner != p.RunID {
			t.Fatalf("key owner after a retry = %q, want %s: a status key is held through retries", owner, p.RunID)
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || n != 1 {
			t.Fatalf("promote = %d, %v", n, err)
		}
		ds = f.read("t", "w1")
		if len(ds) != 1 || ds[0].Spec == nil || ds[0].Spec.Fails != 1 || ds[0].Spec.MaxDeliveries != 5 {
			t.Fatalf("retried delivery = %+v; want the old settings and one failure in its spec", ds)
		}
		st = f.start(ds[0], "w1")
		f.finish(p.RunID, st.Attempt, engine.OutcomeSucceeded, `{}`)
		if n := b.Client.Exists(f.ctx, f.k.IdempotencyKey(p.Key)).Val(); n != 0 {
			t.Fatalf("the key of an old run that succeeded is still held")
		}
		if ttl := b.Client.PTTL(f.ctx, f.k.Run(p.RunID)).Val(); ttl <= 0 || ttl > time.Hour {
			t.Fatalf("old record's TTL after its end = %v, want its retention of 1h", ttl)
		}

		c := f.params("t", "old-2", engine.StrategyStatus)
		f.enqueue(c)
		legacyRun(f, c)
		if res, err := f.s.Cancel(f.ctx, c.RunID, "no longer wanted", f.now); err != nil || !res.Written {
			t.Fatalf("cancel = %+v, %v", res, err)
		}
		if n := b.Client.Exists(f.ctx, f.k.IdempotencyKey(c.Key)).Val(); n != 0 {
			t.Fatalf("the key of a cancelled old run is still held")
		}
	})
}

// A run without metadata ({}, the common case) has no metadata field in
// its record or its stream entry, and reads as {} wherever it is read: the
// delivery, a start from the record, the record itself and a redelivery
// after a retry. A run with metadata has it in both.
func TestRunWithoutMetadataWritesNoneAndReadsAsEmpty(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		bare, tagged := f.params("t", "k1", engine.StrategyStatus), f.params("t", "k2", engine.StrategyStatus)
		tagged.Meta = []byte(`{"tenant":"x"}`)
		f.enqueue(bare)
		f.enqueue(tagged)
		if ok := b.Client.HExists(f.ctx, f.k.Run(bare.RunID), "meta").Val(); ok {
			t.Error("the record of a run without metadata has a meta field")
		}
		if v := b.Client.HGet(f.ctx, f.k.Run(tagged.RunID), "meta").Val(); v != string(tagged.Meta) {
			t.Errorf("record meta = %q, want %q", v, tagged.Meta)
		}
		entries := b.Client.XRange(f.ctx, f.k.Stream("t"), "-", "+").Val()
		if len(entries) != 2 {
			t.Fatalf("stream holds %d entries, want 2", len(entries))
		}
		if _, ok := entries[0].Values["m"]; ok {
			t.Errorf("the entry of a run without metadata carries it: %v", entries[0].Values)
		}
		if entries[1].Values["m"] != string(tagged.Meta) {
			t.Errorf("entry meta = %v, want %s", entries[1].Values["m"], tagged.Meta)
		}
		ds := f.read("t", "w1")
		if len(ds) != 2 || string(ds[0].Spec.Meta) != "{}" || string(ds[1].Spec.Meta) != string(tagged.Meta) {
			t.Fatalf("deliveries' metadata: %+v", ds)
		}
		for i, p := range []*engine.EnqueueParams{bare, tagged} {
			run, err := f.s.GetRun(f.ctx, p.RunID)
			if err != nil || string(run.Meta) != string(p.Meta) {
				t.Errorf("run %s metadata = %q, %v; want %s", p.RunID, run.Meta, err, p.Meta)
			}
			st := f.start(engine.Delivery{Task: "t", EntryID: ds[i].EntryID, RunID: p.RunID}, "w1")
			if st.Spec == nil || string(st.Spec.Meta) != string(p.Meta) {
				t.Fatalf("start from the record of %s read %+v, want metadata %s", p.RunID, st.Spec, p.Meta)
			}
			f.finish(p.RunID, st.Attempt, engine.OutcomeRetry, "again")
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || n != 2 {
			t.Fatalf("promote = %d, %v", n, err)
		}
		ds = f.read("t", "w1")
		if len(ds) != 2 || string(ds[0].Spec.Meta) != "{}" || string(ds[1].Spec.Meta) != string(tagged.Meta) {
			t.Fatalf("redeliveries' metadata: %+v, %+v", ds[0].Spec, ds[1].Spec)
		}
	})
}

// A run without a key (not deduplicated) has no key field in its record
// or its stream entry, and its key reads as "" wherever it is read: the
// delivery, a start from the record, the record itself and a redelivery
// after a retry; it runs and ends as a keyed run does.
func TestRunWithoutKeyWritesNoneAndReadsAsEmpty(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		bare, tagged := f.params("t", "", engine.StrategyNone), f.params("t", "", engine.StrategyNone)
		tagged.Meta = []byte(`{"tenant":"x"}`)
		keyed := f.params("t", "k1", engine.StrategyStatus)
		ps := []*engine.EnqueueParams{bare, tagged, keyed}
		for _, p := range ps {
			f.enqueue(p)
		}
		for _, p := range ps[:2] {
			if ok := b.Client.HExists(f.ctx, f.k.Run(p.RunID), "key").Val(); ok {
				t.Errorf("the record of %s, a run without a key, has a key field", p.RunID)
			}
		}
		if v := b.Client.HGet(f.ctx, f.k.Run(keyed.RunID), "key").Val(); v != "k1" {
			t.Errorf("record key of the keyed run = %q, want k1", v)
		}
		entries := b.Client.XRange(f.ctx, f.k.Stream("t"), "-", "+").Val()
		if len(entries) != 3 {
			t.Fatalf("stream holds %d entries, want 3", len(entries))
		}
		for i, want := range []string{"", "", "k1"} {
			if v, ok := entries[i].Values["k"]; ok != (want != "") || (ok && v != want) {
				t.Errorf("entry %d key field = %v (present %v), want %q", i, v, ok, want)
			}
		}
		ds := f.read("t", "w1")
		if len(ds) != 3 {
			t.Fatalf("read %d deliveries, want 3", len(ds))
		}
		for i, p := range ps {
			if ds[i].Spec == nil || ds[i].Spec.Key != p.Key || string(ds[i].Spec.Meta) != string(p.Meta) {
				t.Fatalf("delivery %d = %+v, want key %q and metadata %s", i, ds[i].Spec, p.Key, p.Meta)
			}
			run, err := f.s.GetRun(f.ctx, p.RunID)
			if err != nil || run.Key != p.Key || run.Task != "t" {
				t.Errorf("run %s = %+v, %v; want key %q", p.RunID, run, err, p.Key)
			}
			st := f.start(engine.Delivery{Task: "t", EntryID: ds[i].EntryID, RunID: p.RunID}, "w1")
			if st.Spec == nil || st.Spec.Key != p.Key {
				t.Fatalf("start from the record of %s read %+v, want key %q", p.RunID, st.Spec, p.Key)
			}
			f.finish(p.RunID, st.Attempt, engine.OutcomeRetry, "again")
		}
		if n, err := f.s.Promote(f.ctx, 0, f.now.Add(time.Hour), 10); err != nil || n != 3 {
			t.Fatalf("promote = %d, %v", n, err)
		}
		ds = f.read("t", "w1")
		if len(ds) != 3 {
			t.Fatalf("read %d redeliveries, want 3", len(ds))
		}
		for i, want := range []string{"", "", "k1"} {
			e := b.Client.XRange(f.ctx, f.k.Stream("t"), ds[i].EntryID, ds[i].EntryID).Val()
			if len(e) != 1 {
				t.Fatalf("redelivery %d: entry %s not in the stream", i, ds[i].EntryID)
			}
			if v, ok := e[0].Values["k"]; ok != (want != "") || (ok && v != want) {
				t.Errorf("redelivered entry %d key field = %v (present %v), want %q", i, v, ok, want)
			}
			if v, ok := e[0].Values["m"]; ok != (i == 1) {
				t.Errorf("redelivered entry %d metadata field = %v (present %v), want it only with metadata", i, v, ok)
			}
		}
		for i, p := range ps {
			if ds[i].Spec == nil || ds[i].Spec.Key != p.Key {
				t.Fatalf("redelivery %d = %+v, want key %q", i, ds[i].Spec, p.Key)
			}
			st := f.start(ds[i], "w1")
			f.finish(p.RunID, st.Attempt, engine.OutcomeSucceeded, `{}`)
			if run, err := f.s.GetRun(f.ctx, p.RunID); err != nil || run.Status != "succeeded" || run.Key != p.Key {
				t.Errorf("run %s after its end = %+v, %v; want succeeded with key %q", p.RunID, run, err, p.Key)
			}
		}
		if n := b.Client.Exists(f.ctx, f.k.IdempotencyKey("k1")).Val(); n != 0 {
			t.Error("the keyed run's key is still held after its end")
		}
	})
}
