package redisstore_test

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// StartBatch gives each delivery of a batch the outcome Start gives it
// alone: started with its attempt and data, or skipped with the reason.
func TestStartBatchStartsEachDeliveryAsStartWould(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		var ps []*engine.EnqueueParams
		for _, k := range []string{"a", "b", "c", "d"} {
			p := f.params("t", k, engine.StrategyStatus)
			f.enqueue(p)
			ps = append(ps, p)
		}
		ds := f.read("t", "w1")
		if len(ds) != 4 {
			t.Fatalf("read %d deliveries, want 4", len(ds))
		}
		// b: cancelled before it starts; c: its record is gone; d: an
		// older delivery of a run that was queued again meanwhile.
		if _, err := f.s.Cancel(f.ctx, ps[1].RunID, "test", f.now); err != nil {
			t.Fatal(err)
		}
		b.Client.Del(f.ctx, f.k.Run(ps[2].RunID))
		b.Client.HSet(f.ctx, f.k.Run(ps[3].RunID), "entry", "0-1")
		// The batch must load the script itself. Only on miniredis: the
		// shared server's cache is not ours to flush.
		if !b.Real() {
			b.Client.ScriptFlush(f.ctx)
		}
		res, errs := f.s.StartBatch(f.ctx, "w1", f.now, ds)
		for i, err := range errs {
			if err != nil {
				t.Fatalf("delivery %d: %v", i, err)
			}
		}
		if r := res[0]; !r.Started || r.Attempt != 1 || string(r.Spec.Input) != `{"id":"1"}` || r.Spec.Key != "a" || r.Spec.Retries != 1 {
			t.Fatalf("first delivery = %+v, want started as attempt 1 with its input and key", r)
		}
		for i, want := range []string{"", "cancelled", "missing", "stale"} {
			if i > 0 && (res[i].Started || res[i].Reason != want) {
				t.Errorf("delivery %d = %+v, want skipped as %q", i, res[i], want)
			}
		}
		run, err := f.s.GetRun(f.ctx, ps[0].RunID)
		if err != nil || run.Status != engine.StatusRunning || run.Attempt != 1 || run.Consumer != "w1" {
			t.Fatalf("started run = %+v, %v", run, err)
		}
		// The skipped deliveries were acknowledged and deleted; the
		// started one stays pending with its worker.
		if n := b.Client.XLen(f.ctx, f.k.Stream("t")).Val(); n != 1 {
			t.Fatalf("stream holds %d entries, want only the started one", n)
		}
	})
}

func TestStartBatchOfNothing(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	res, errs := f.s.StartBatch(f.ctx, "w1", f.now, nil)
	if len(res) != 0 || len(errs) != 0 {
		t.Fatalf("empty batch = %v, %v", res, errs)
	}
}

// One delivery whose run record holds the wrong type fails alone.
func TestStartBatchErrorsStayWithTheirDelivery(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		good, bad := f.params("t", "a", engine.StrategyStatus), f.params("t", "b", engine.StrategyStatus)
		f.enqueue(good)
		f.enqueue(bad)
		ds := f.read("t", "w1")
		b.Client.Del(f.ctx, f.k.Run(bad.RunID))
		b.Client.Set(f.ctx, f.k.Run(bad.RunID), "not a hash", 0)
		res, errs := f.s.StartBatch(f.ctx, "w1", f.now, []engine.Delivery{ds[1], ds[0]})
		if !errors.Is(errs[0], engine.ErrWrongType) {
			t.Fatalf("wrong-type record: %v, want ErrWrongType", errs[0])
		}
		if errs[1] != nil || !res[1].Started {
			t.Fatalf("the other delivery = %+v, %v; want started", res[1], errs[1])
		}
	})
}

// Every script the store sends with EVALSHA is ScriptSource's; or, for a
// script with a shebang line, that source without that line (for servers
// that cannot compile one); or, for a script that publishes notices, its
// sharded form, which a store on a cluster sends. Each script is a
// function of the library (FCALL), named taskq_<script>_<hash>, and one
// that publishes has a sharded function too.
func TestScriptSourceIsWhatTheStoreRuns(t *testing.T) {
	names := redisstore.ScriptNames()
	hash := func(s string) string { sum := sha1.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	seen, functions, matched := map[string]int{}, map[string]int{}, map[string]int{}
	for sha, name := range names {
		if strings.HasPrefix(sha, "taskq_") {
			if !strings.HasPrefix(sha, "taskq_"+name+"_") {
				t.Errorf("function %s is named for another script than %s", sha, name)
			}
			functions[name]++
			continue
		}
		seen[name]++
		src, err := redisstore.ScriptSource(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		first, plain, _ := strings.Cut(src, "\n")
		if hash(src) == sha || strings.HasPrefix(first, "#!") && hash(plain) == sha {
			matched[name]++
		}
	}
	for name, n := range seen {
		src, _ := redisstore.ScriptSource(name)
		want := 1 + strings.Count(src[:min(len(src), 2)], "#!")
		if matched[name] != want {
			t.Errorf("%s: %d of the SHAs sent are its source's, want %d", name, matched[name], want)
		}
		if fns := functions[name]; fns < 1 || fns > 2 || n != want+fns-1 {
			t.Errorf("%s is sent as %d scripts and %d functions, want %d and 1, or %d and 2", name, n, fns, want, want+1)
		}
	}
	for _, bad := range []string{"lib", "nope", ""} {
		if _, err := redisstore.ScriptSource(bad); err == nil {
			t.Errorf("ScriptSource(%q) gave no error", bad)
		}
	}
}

// EnqueueCall's KEYS and ARGV, sent to the enqueue script by hand, do what
// Enqueue does.
func TestEnqueueCallIsWhatEnqueueSends(t *testing.T) {
	redistest.Each(t, func(t *testing.T, b *redistest.Backend) {
		f := newFixture(t, b)
		src, err := redisstore.ScriptSource("enqueue")
		if err != nil {
			t.Fatal(err)
		}
		p := f.params("t", "k", engine.StrategyStatus)
		keys, args := f.s.EnqueueCall(p)
		flat, err := b.Client.Eval(f.ctx, src, keys, args...).Slice()
		all := redisstore.EnqueueReplies(flat)
		if err != nil || len(all) != 1 {
			t.Fatalf("enqueue by hand = %v, %v; want one reply", flat, err)
		}
		v, _ := all[0].([]any)
		if len(v) != 2 || v[0] != int64(1) {
			t.Fatalf("enqueue by hand = %v, %v", v, err)
		}
		dup := f.params("t", "k", engine.StrategyStatus)
		if r := f.enqueue(dup); r.Accepted || r.Owner != p.RunID {
			t.Fatalf("a trigger of the same key = %+v, want a collision with %s", r, p.RunID)
		}
		run, err := f.s.GetRun(f.ctx, p.RunID)
		if err != nil || run.Key != "k" || run.Strategy != engine.StrategyStatus || string(run.Input) != string(p.Input) {
			t.Fatalf("run = %+v, %v", run, err)
		}
	})
}

// EnqueueReplies cuts enqueue.lua's flat reply by each code's count of
// values, giving a superseding creation as a creation naming the old owner
// and an error as itself.
func TestEnqueueRepliesCutTheFlatReplyByCode(t *testing.T) {
	refused := errors.New("TASKQ_EXISTS run-x")
	flat := []any{int64(1), "e1", int64(5), "e2", "old", int64(0), "o", int64(1000), refused,
		int64(2), "o2", int64(3), "o3", "sig", int64(4), "o4"}
	got := fmt.Sprint(redisstore.EnqueueReplies(flat))
	want := fmt.Sprint([]any{[]any{int64(1), "e1"}, []any{int64(1), "e2", "old"}, []any{int64(0), "o", int64(1000)},
		refused, []any{int64(2), "o2"}, []any{int64(3), "o3", "sig"}, []any{int64(4), "o4"}})
	if got != want {
		t.Fatalf("EnqueueReplies = %s, want %s", got, want)
	}
}
