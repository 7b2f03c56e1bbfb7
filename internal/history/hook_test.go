package history

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/taskq/taskq/internal/engine"
	"github.com/taskq/taskq/internal/redisstore"
	"github.com/taskq/taskq/internal/redistest"
)

// hooked enqueues runs a, b and c of task t through a client whose calls
// are recorded into buf, on real Redis.
func hooked(t *testing.T) (ctx context.Context, now time.Time, st *redisstore.Store, rdb *redis.Client, buf *strings.Builder) {
	t.Helper()
	b := redistest.Real(t)
	rdb = redis.NewClient(&redis.Options{Addr: b.Client.(*redis.Client).Options().Addr})
	t.Cleanup(func() { rdb.Close() })
	// With the scripts cached and their functions loaded, the first call of
	// each is not answered NOSCRIPT or "Function not found", which the hook
	// would rightly record as of unknown outcome.
	for _, name := range redisstore.ScriptNames() {
		src, err := redisstore.ScriptSource(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.ScriptLoad(context.Background(), src).Err(); err != nil {
			t.Fatal(err)
		}
		if _, lib, err := redisstore.ScriptFunction(name); err != nil {
			t.Fatal(err)
		} else if err := rdb.FunctionLoadReplace(context.Background(), lib).Err(); err != nil {
			t.Fatal(err)
		}
	}
	buf = &strings.Builder{}
	rdb.AddHook(NewHook(NewRecorder("p1", buf)))
	ctx, now = context.Background(), time.Now()
	st = redisstore.New(rdb, b.Namespace)
	var ps []*engine.EnqueueParams
	for _, id := range []string{"a", "b", "c"} {
		ps = append(ps, &engine.EnqueueParams{RunID: id, Task: "t", Input: []byte(`{}`), Meta: []byte(`{}`),
			Key: "k-" + id, Strategy: engine.StrategyStatus, Hold: time.Minute, Retention: time.Minute, Now: now})
	}
	if _, errs := st.EnqueueBatch(ctx, ps); errs[0] != nil || errs[1] != nil || errs[2] != nil {
		t.Fatal(errs)
	}
	if err := st.EnsureGroup(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	return ctx, now, st, rdb, buf
}

// The hook records one operation per item of a batched call, each with its
// own reply, though start and finish answer with one flat array whose
// items differ in length (a delivery without a spec gets the record's
// values too).
func TestHookSplitsBatchedReplies(t *testing.T) {
	ctx, now, st, rdb, buf := hooked(t)
	ds, err := st.ReadGroup(ctx, 0, "w1", []string{"t"}, 10, -1)
	if err != nil || len(ds) != 3 {
		t.Fatalf("read %d, %v", len(ds), err)
	}
	ds[0].Spec = nil // started from the record: a longer reply
	rdb.Del(ctx, st.Keys().Run("c"))
	sts, _ := st.StartBatch(ctx, "w1", now, ds)
	var fps []*engine.FinishParams
	for i, d := range ds[:2] {
		fps = append(fps, &engine.FinishParams{RunID: d.RunID, Attempt: sts[i].Attempt, Outcome: engine.OutcomeSucceeded,
			Now: now, Task: d.Task, EntryID: d.EntryID, Spec: sts[i].Spec})
	}
	st.FinishBatch(ctx, fps)

	ops, err := Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		if op.Kind == KindStart || op.Kind == KindFinish {
			got = append(got, string(op.Kind)+" "+op.RunID+" "+string(op.Result.Code)+" "+op.Result.Status)
		}
	}
	want := []string{
		"start a ok running", "start b ok running", "start c refused missing",
		"finish a ok succeeded", "finish b ok succeeded",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A finish that begins its attempt is recorded as one that Begins, with
// the attempt it begins, and a reclaimed delivery's start as Redelivered;
// the history of a real Redis running them passes the check.
func TestHookRecordsBeganFinish(t *testing.T) {
	ctx, now, st, _, buf := hooked(t)
	ds, err := st.ReadGroup(ctx, 0, "w1", []string{"t"}, 10, -1)
	if err != nil || len(ds) != 3 || ds[0].RunID != "a" || ds[1].RunID != "b" || ds[2].RunID != "c" {
		t.Fatalf("read %+v, %v", ds, err)
	}
	beganFinish := func(d engine.Delivery) *engine.FinishParams {
		return &engine.FinishParams{RunID: d.RunID, Attempt: d.Spec.Attempts + 1, Outcome: engine.OutcomeSucceeded,
			Now: now, Task: d.Task, EntryID: d.EntryID, Spec: d.Spec, Began: now, Consumer: "w1"}
	}
	// b is begun by start.lua first, so its began finish is stale; c's
	// delivery is reclaimed as if its worker had died mid-handler.
	sts, errs := st.StartBatch(ctx, "w1", now, ds[1:2])
	if errs[0] != nil || !sts[0].Started || sts[0].Attempt != 1 {
		t.Fatalf("start b = %+v, %v", sts[0], errs[0])
	}
	st.FinishBatch(ctx, []*engine.FinishParams{beganFinish(ds[0]), beganFinish(ds[1])})
	st.FinishBatch(ctx, []*engine.FinishParams{beganFinish(ds[0])}) // a has ended
	st.FinishBatch(ctx, []*engine.FinishParams{{RunID: "b", Attempt: 1, Outcome: engine.OutcomeSucceeded,
		Now: now, Task: ds[1].Task, EntryID: ds[1].EntryID, Spec: sts[0].Spec}})
	cs, err := st.AutoClaim(ctx, 0, "t", "w2", 0, 10)
	if err != nil || len(cs) != 1 || cs[0].RunID != "c" || !cs[0].Redelivered {
		t.Fatalf("reclaimed %+v, %v", cs, err)
	}
	sts, errs = st.StartBatch(ctx, "w2", now, cs)
	if errs[0] != nil || !sts[0].Started || sts[0].Attempt != 2 {
		t.Fatalf("start c = %+v, %v", sts[0], errs[0])
	}
	st.FinishBatch(ctx, []*engine.FinishParams{{RunID: "c", Attempt: 2, Outcome: engine.OutcomeSucceeded,
		Now: now, Task: cs[0].Task, EntryID: cs[0].EntryID, Spec: sts[0].Spec}})

	ops, err := Read(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		if op.Kind == KindStart || op.Kind == KindFinish {
			got = append(got, fmt.Sprintf("%s %s %d begins=%t redelivered=%t %s %s %d", op.Kind, op.RunID, op.Attempt,
				op.Begins, op.Redelivered, op.Result.Code, op.Result.Status, op.Result.Attempt))
		}
	}
	want := []string{
		"start b 0 begins=false redelivered=false ok running 1",
		"finish a 1 begins=true redelivered=false ok succeeded 0",
		"finish b 1 begins=true redelivered=false refused stale 0",
		"finish a 1 begins=true redelivered=false refused succeeded 0",
		"finish b 1 begins=false redelivered=false ok succeeded 0",
		"start c 0 begins=false redelivered=true ok running 2",
		"finish c 2 begins=false redelivered=false ok succeeded 0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := Check(ops, Options{Timeout: 5 * time.Second}); !r.OK() || r.Runs != 3 || r.Ended["succeeded"] != 3 {
		t.Fatalf("report %+v: %v", r, r.Err())
	}
}
